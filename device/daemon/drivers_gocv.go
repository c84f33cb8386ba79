//go:build gocv

package daemon

import (
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/gocv"
	"github.com/chorus-robotics/chorus/runtime/config"
)

func init() {
	cameraSources["gocv"] = func(c *config.Config) camera.Source {
		d := c.Drivers.Camera
		return &gocv.Source{Device: d.Device, Width: d.Width, Height: d.Height, Quality: d.Quality}
	}
}
