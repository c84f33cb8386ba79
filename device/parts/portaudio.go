//go:build portaudio

package parts

import (
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/portaudio"
	"github.com/chorus-robotics/chorus/drivers/mic"
	mportaudio "github.com/chorus-robotics/chorus/drivers/mic/portaudio"
)

func init() {
	Audio.Add(Part[audio.Output]{Kind: "portaudio", About: "a sound card through PortAudio (drivers.audio.device)", Tag: "portaudio",
		Make: func(c *robot.Config, _ Env) (audio.Output, error) {
			o := &portaudio.Output{Device: c.Drivers.Audio.Device, Rate: c.Drivers.Audio.SampleRate}
			return o, o.Open()
		}})
	Mics.Add(Part[mic.Source]{Kind: "portaudio", About: "a sound card's input through PortAudio (drivers.mic.device)", Tag: "portaudio",
		Make: func(c *robot.Config, _ Env) (mic.Source, error) {
			d := c.Drivers.Mic
			return &mportaudio.Source{Device: d.Device, SampleRate: d.SampleRate}, nil
		}})
}
