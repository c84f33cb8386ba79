package parts

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/config"
)

// Every shipped config names parts that exist (in some build) with the
// fields they need: what `chorus install` checks before it writes.
func TestShippedConfigsNameKnownParts(t *testing.T) {
	files, _ := filepath.Glob("../../firmware-configs/*.yaml")
	demo, _ := filepath.Glob("../../firmware-configs/demo/*.yaml")
	for _, f := range append(files, demo...) {
		c, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if p := Check(c, Anywhere); len(p) > 0 {
			t.Errorf("%s: %v", f, p)
		}
	}
}

func TestListNamesEveryKind(t *testing.T) {
	list := List()
	for _, kinds := range [][]string{Cameras.Kinds(), Audio.Kinds(), TTS.Kinds(), Brains.Kinds()} {
		for _, k := range kinds {
			if !strings.Contains(list, "  "+k+" ") {
				t.Errorf("--list lacks %q:\n%s", k, list)
			}
		}
	}
	for _, g := range []string{"camera sources", "audio outputs", "TTS engines", "brains"} {
		if !strings.Contains(list, g) {
			t.Errorf("--list lacks %q", g)
		}
	}
}

// A kind the config names but no build has is an error naming the field
// and the kinds there are; a field a kind needs is reported by that kind.
func TestUnknownKindsAndTheirFields(t *testing.T) {
	c, err := config.Decode(strings.NewReader(`version: 1
device: {id: d}
room: {name: lab, members: [k]}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: k, name: K, language: en}
brain: {provider: openai}
drivers: {camera: {kind: webcam}, audio: {kind: wav}, tts: {kind: piper}}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Check(c, Anywhere), "\n")
	for _, want := range []string{
		`drivers.camera.kind: must be one of gocv, image, none, testpattern, got "webcam"`,
		"drivers.audio.dir: required for kind wav",
		"drivers.tts.binary: required for kind piper",
		"drivers.tts.model: required for kind piper",
		"brain.model: required for provider openai",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check lacks %q:\n%s", want, got)
		}
	}
}

// A kind some build lacks names the tag that builds it in, and InBuild
// refuses it for a binary built without that tag.
func TestTaggedKindsAndInBuild(t *testing.T) {
	for _, g := range []struct {
		kinds func() []string
		part  func(string) (string, string)
	}{
		{Cameras.Kinds, func(k string) (string, string) { return Cameras.parts[k].Absent, Cameras.parts[k].Tag }},
		{Audio.Kinds, func(k string) (string, string) { return Audio.parts[k].Absent, Audio.parts[k].Tag }},
		{TTS.Kinds, func(k string) (string, string) { return TTS.parts[k].Absent, TTS.parts[k].Tag }},
		{Brains.Kinds, func(k string) (string, string) { return Brains.parts[k].Absent, Brains.parts[k].Tag }},
	} {
		for _, k := range g.kinds() {
			if absent, tag := g.part(k); absent != "" && tag == "" {
				t.Errorf("kind %s is absent from this build but names no Tag", k)
			}
		}
	}
	c, err := config.Decode(strings.NewReader(`version: 1
device: {id: dev1}
room: {name: lab, members: [k]}
mqtt: {broker: "tcp://127.0.0.1:1883"}
drivers:
  camera: {kind: gocv, device: "0"}
  audio: {kind: portaudio}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tags []string
		want []string
	}{
		{nil, []string{`drivers.camera.kind: camera source "gocv" is not in this chorusd (built without build tags): build it with -tags gocv`,
			`drivers.audio.kind: audio output "portaudio" is not in this chorusd (built without build tags): build it with -tags portaudio`}},
		{[]string{"gocv"}, []string{`drivers.audio.kind: audio output "portaudio" is not in this chorusd (built with -tags gocv): build it with -tags portaudio`}},
		{[]string{"gocv", "portaudio"}, nil},
	} {
		if got := InBuild(c, tc.tags); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("tags %v:\n got %q\nwant %q", tc.tags, got, tc.want)
		}
	}
}
