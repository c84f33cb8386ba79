//go:build !portaudio

package parts

import "github.com/chorus-robotics/chorus/drivers/audio"

func init() {
	Audio.Add(Part[audio.Output]{Kind: "portaudio", About: "a sound card through PortAudio (drivers.audio.device)",
		Absent: "build chorusd with -tags portaudio (needs Debian's portaudio19-dev)", Tag: "portaudio"})
}
