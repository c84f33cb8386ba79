package parts

import "github.com/chorus-robotics/chorus/device/robot"

// gocvCheck is the gocv camera's field check, in every build.
func gocvCheck(c *robot.Config, _ Mode) []string {
	return need("drivers.camera.device", c.Drivers.Camera.Device, "required for kind gocv (an index such as 0, /dev/videoN, or a video file)")
}
