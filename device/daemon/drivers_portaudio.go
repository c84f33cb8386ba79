//go:build portaudio

package daemon

import (
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/portaudio"
	"github.com/chorus-robotics/chorus/runtime/config"
)

func init() {
	audioOutputs["portaudio"] = func(c *config.Config) (audio.Output, error) {
		o := &portaudio.Output{Device: c.Drivers.Audio.Device, Rate: c.Drivers.Audio.SampleRate}
		return o, o.Open()
	}
}
