//go:build gocv

package parts

import (
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/gocv"
	"github.com/chorus-robotics/chorus/runtime/config"
)

func init() {
	Cameras.Add(Part[camera.Source]{Kind: "gocv", About: "a camera or video file through OpenCV (drivers.camera.device)",
		Tag: "gocv", Check: gocvCheck,
		Make: func(c *config.Config, _ Env) (camera.Source, error) {
			d := c.Drivers.Camera
			return &gocv.Source{Device: d.Device, Width: d.Width, Height: d.Height, Quality: d.Quality}, nil
		}})
}
