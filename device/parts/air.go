package parts

import (
	"fmt"
	"net"
	"strconv"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/air"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

// The shared acoustic space (drivers/air) of tests and the demo: the
// robot's speaker plays into it and its microphone hears it, both under
// the robot's identity, so its mic hears its own voice at gain 1 and the
// other robots' attenuated.
func init() {
	Audio.Add(Part[audio.Output]{Kind: "air", About: "plays into a shared acoustic space, `chorus air serve` (drivers.audio.air: HOST:PORT; tests, demos)",
		Check: func(c *robot.Config, _ Mode) []string { return hostPort("drivers.audio.air", c.Drivers.Audio.Air) },
		Make: func(c *robot.Config, _ Env) (audio.Output, error) {
			return &air.Output{Addr: c.Drivers.Audio.Air, ID: c.Identity()}, nil
		}})
	Mics.Add(Part[mic.Source]{Kind: "air", About: "hears a shared acoustic space, `chorus air serve` (drivers.mic.air: HOST:PORT; tests, demos)",
		Check: func(c *robot.Config, _ Mode) []string { return hostPort("drivers.mic.air", c.Drivers.Mic.Air) },
		Make: func(c *robot.Config, _ Env) (mic.Source, error) {
			return &air.Source{Addr: c.Drivers.Mic.Air, ID: c.Identity()}, nil
		}})
}

// hostPort checks that v is a host:port with a port number.
func hostPort(field, v string) []string {
	if v == "" {
		return []string{field + ": required for kind air: the air server's HOST:PORT"}
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return []string{fmt.Sprintf("%s: must be HOST:PORT, got %q", field, v)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return []string{fmt.Sprintf("%s: must be HOST:PORT with a port from 1 to 65535, got %q", field, v)}
	}
	return nil
}
