//go:build !gocv

package parts

import "github.com/chorus-robotics/chorus/drivers/camera"

func init() {
	Cameras.Add(Part[camera.Source]{Kind: "gocv", About: "a camera or video file through OpenCV (drivers.camera.device)",
		Absent: "build chorusd with -tags gocv (needs Debian's libopencv-dev)", Tag: "gocv", Check: gocvCheck})
}
