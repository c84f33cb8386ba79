//go:build portaudio

package parts

import (
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/portaudio"
	"github.com/chorus-robotics/chorus/runtime/config"
)

func init() {
	Audio.Add(Part[audio.Output]{Kind: "portaudio", About: "a sound card through PortAudio (drivers.audio.device)", Tag: "portaudio",
		Make: func(c *config.Config, _ Env) (audio.Output, error) {
			o := &portaudio.Output{Device: c.Drivers.Audio.Device, Rate: c.Drivers.Audio.SampleRate}
			return o, o.Open()
		}})
}
