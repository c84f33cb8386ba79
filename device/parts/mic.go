package parts

import (
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/mic"
	mcommand "github.com/chorus-robotics/chorus/drivers/mic/command"
	"github.com/chorus-robotics/chorus/drivers/mic/file"
)

// The microphones every build has: none, a WAV file heard as if spoken
// into the room (tests, demos), and a program writing PCM (arecord,
// pw-record: the pure-Go robot hears through it).
func init() {
	Mics.Add(Part[mic.Source]{Kind: "none", About: "no microphone: the robot does not hear"})
	Mics.Add(Part[mic.Source]{Kind: "file", About: "a WAV file heard in real time, as if spoken into the room (drivers.mic.path; tests, demos)",
		Check: func(c *robot.Config, m Mode) []string {
			out := need("drivers.mic.path", c.Drivers.Mic.Path, "required for kind file: a WAV file")
			if len(out) == 0 && m == Here && !fileExists(c.Resolve(c.Drivers.Mic.Path)) {
				out = append(out, "drivers.mic.path: "+c.Resolve(c.Drivers.Mic.Path)+" is not there")
			}
			return out
		},
		Make: func(c *robot.Config, _ Env) (mic.Source, error) {
			d := c.Drivers.Mic
			s := file.New(c.Resolve(d.Path))
			s.SampleRate, s.Loop, s.Silence = d.SampleRate, d.Loop, file.Forever
			return s, nil
		}})
	Mics.Add(Part[mic.Source]{Kind: "command", About: "a program writing s16le PCM to stdout: arecord, pw-record (drivers.mic.command, {rate})",
		Check: func(c *robot.Config, m Mode) []string {
			return program("drivers.mic.command", c.Drivers.Mic.Command, "required for kind command: a program writing mono s16le PCM to stdout, such as [arecord, -q, -r, \"{rate}\", -c, \"1\", -f, S16_LE, -t, raw]", m)
		},
		Make: func(c *robot.Config, _ Env) (mic.Source, error) {
			d := c.Drivers.Mic
			return &mcommand.Source{Command: d.Command, SampleRate: d.SampleRate}, nil
		}})
}
