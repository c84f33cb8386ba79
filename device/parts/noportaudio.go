//go:build !portaudio

package parts

import (
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

func init() {
	Audio.Add(Part[audio.Output]{Kind: "portaudio", About: "a sound card through PortAudio (drivers.audio.device)",
		Absent: "build chorusd with -tags portaudio (needs Debian's portaudio19-dev)", Tag: "portaudio"})
	Mics.Add(Part[mic.Source]{Kind: "portaudio", About: "a sound card's input through PortAudio (drivers.mic.device)",
		Absent: "build chorusd with -tags portaudio (needs Debian's portaudio19-dev), or use kind command with arecord", Tag: "portaudio"})
}
