package parts

import (
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/air"
)

func TestAirKinds(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
	}{
		{"127.0.0.1:7070", ""},
		{"air.local:7070", ""},
		{"", "drivers.audio.air: required for kind air"},
		{"127.0.0.1", "drivers.audio.air: must be HOST:PORT"},
		{"127.0.0.1:http", "port from 1 to 65535"},
		{":7070", "port from 1 to 65535"},
	} {
		c, err := robot.Decode(strings.NewReader(`version: 1
device: {id: d}
room: {name: lab, members: [kyoko]}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: kyoko, name: K, language: en}
drivers: {audio: {kind: air, air: "` + tc.addr + `"}, mic: {kind: air, air: "` + tc.addr + `"}}
`))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(Check(c, Anywhere), "\n")
		if tc.want == "" {
			if strings.Contains(got, ".air") {
				t.Errorf("%q: %s", tc.addr, got)
			}
			out, err := Audio.Make(c, Env{})
			if o, ok := out.(*air.Output); err != nil || !ok || o.Addr != tc.addr || o.ID != "kyoko" {
				t.Errorf("%q: made %#v, %v", tc.addr, out, err)
			}
			src, err := Mics.Make(c, Env{})
			if s, ok := src.(*air.Source); err != nil || !ok || s.Addr != tc.addr || s.ID != "kyoko" {
				t.Errorf("%q: made %#v, %v", tc.addr, src, err)
			}
			continue
		}
		if !strings.Contains(got, tc.want) || !strings.Contains(got, strings.Replace(tc.want, "audio", "mic", 1)[:15]) {
			t.Errorf("%q: check lacks %q:\n%s", tc.addr, tc.want, got)
		}
	}
}
