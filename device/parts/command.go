package parts

import (
	"fmt"
	"log/slog"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	acommand "github.com/chorus-robotics/chorus/drivers/audio/command"
	"github.com/chorus-robotics/chorus/drivers/camera"
	ccommand "github.com/chorus-robotics/chorus/drivers/camera/command"
)

// The body drivers that need no C library: a camera program writing MJPEG
// and a player reading PCM, run as child processes, so a cross-built
// pure-Go chorusd is a whole robot.
func init() {
	Cameras.Add(Part[camera.Source]{Kind: "command", About: "a program writing MJPEG to stdout: rpicam-vid, ffmpeg (drivers.camera.command)",
		Check: func(c *robot.Config, m Mode) []string {
			d := c.Drivers.Camera
			out := program("drivers.camera.command", d.Command, "required for kind command: a program writing MJPEG to stdout, such as [rpicam-vid, -t, \"0\", -n, --codec, mjpeg, -o, \"-\"]", m)
			// A frame travels base64 in a vision result.
			if b64 := (d.MaxFrame + 2) / 3 * 4; b64+4096 > c.Query.MaxResult {
				out = append(out, fmt.Sprintf("drivers.camera.max_frame: %d bytes is %d in base64, more than query.max_result (%d) carries", d.MaxFrame, b64, c.Query.MaxResult))
			}
			return out
		},
		Make: func(c *robot.Config, env Env) (camera.Source, error) {
			d := c.Drivers.Camera
			s := &ccommand.Source{Command: d.Command, MaxFrame: d.MaxFrame, Log: env.Log}
			if env.Metrics != nil {
				bad := env.Metrics.BadInput
				s.OnBad = func(kind string) { bad.WithLabelValues("camera command", kind).Inc() }
			}
			return s, nil
		}})
	Audio.Add(Part[audio.Output]{Kind: "command", About: "pipes s16le PCM to a player per utterance: aplay, pw-play, paplay (drivers.audio.command, {rate})",
		Check: func(c *robot.Config, m Mode) []string {
			return program("drivers.audio.command", c.Drivers.Audio.Command, "required for kind command: a player reading PCM from stdin, such as [aplay, -q, -t, raw, -f, S16_LE, -r, \"{rate}\", -c, \"1\"]", m)
		},
		Make: func(c *robot.Config, env Env) (audio.Output, error) {
			a := c.Drivers.Audio
			if env.Log != nil {
				env.Log.Info("audio: command", slog.Any("command", a.Command), "sample_rate", a.SampleRate)
			}
			return &acommand.Output{Command: a.Command, Rate: a.SampleRate}, nil
		}})
}

// program checks a command driver's program: given, and here, on PATH
// (or at its path) and executable.
func program(field string, argv []string, why string, m Mode) []string {
	if len(argv) == 0 {
		return []string{field + ": " + why}
	}
	return binary(field+"[0]", argv[0], m)
}
