//go:build gocv

package parts

import (
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/gocv"
)

func init() {
	Cameras.Add(Part[camera.Source]{Kind: "gocv", About: "a camera or video file through OpenCV (drivers.camera.device)",
		Tag: "gocv", Check: gocvCheck,
		Make: func(c *robot.Config, _ Env) (camera.Source, error) {
			d := c.Drivers.Camera
			return &gocv.Source{Device: d.Device, Width: d.Width, Height: d.Height, Quality: d.Quality}, nil
		}})
}
