package parts

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/device/robot"
)

// Every shipped config names parts that exist (in some build) with the
// fields they need: what `chorus install` checks before it writes.
func TestShippedConfigsNameKnownParts(t *testing.T) {
	files, _ := filepath.Glob("../../firmware-configs/*.yaml")
	livingroom, _ := filepath.Glob("../../firmware-configs/livingroom/*.yaml")
	files = append(files, livingroom...)
	demo, _ := filepath.Glob("../../firmware-configs/demo/*.yaml")
	for _, f := range append(files, demo...) {
		c, err := robot.Load(f)
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
	c, err := robot.Decode(strings.NewReader(`version: 1
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
		`drivers.camera.kind: must be one of command, gocv, image, none, testpattern, got "webcam"`,
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
	c, err := robot.Decode(strings.NewReader(`version: 1
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

// The command drivers: the program is required, must exist here (what
// `chorusd --check-config` says on the robot), and is for kind command
// only; a camera frame must fit a vision result.
func TestCommandDrivers(t *testing.T) {
	base := `version: 1
device: {id: d}
room: {name: lab, members: [k]}
mqtt: {broker: "tcp://127.0.0.1:1"}
`
	for _, c := range []struct {
		name, drivers string
		mode          Mode
		want          []string // empty: no problem
	}{
		{"both fine anywhere", `{camera: {kind: command, command: [rpicam-vid, -o, "-"]}, audio: {kind: command, command: [aplay, -r, "{rate}"]}}`, Anywhere, nil},
		{"both fine here", `{camera: {kind: command, command: [sh, -c, "exit 1"]}, audio: {kind: command, command: [cat]}}`, Here, nil},
		{"programs missing here", `{camera: {kind: command, command: [rpicam-vid-not-here]}, audio: {kind: command, command: [/nonexistent/aplay]}}`, Here,
			[]string{`drivers.camera.command[0]: "rpicam-vid-not-here" is not there`, `drivers.audio.command[0]: "/nonexistent/aplay" is not there`}},
		{"programs not given", `{camera: {kind: command}, audio: {kind: command}}`, Anywhere,
			[]string{"drivers.camera.command: required for kind command", "drivers.audio.command: required for kind command"}},
		{"frame cap over the result cap", `{camera: {kind: command, command: [x], max_frame: 8000000}}`, Anywhere,
			[]string{"drivers.camera.max_frame: 8000000 bytes is 10666668 in base64, more than query.max_result (8388608)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := robot.Decode(strings.NewReader(base + "drivers: " + c.drivers + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := Check(cfg, c.mode)
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %q", got, c.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.want[i]) {
					t.Errorf("problem %q, want %q", got[i], c.want[i])
				}
			}
		})
	}
	for _, c := range []struct{ drivers, want string }{
		{`{camera: {kind: testpattern, command: [rpicam-vid]}}`, `drivers.camera.command: is only for kind command, got kind "testpattern"`},
		{`{audio: {kind: wav, dir: out, command: [aplay]}}`, `drivers.audio.command: is only for kind command, got kind "wav"`},
		{`{audio: {kind: command, command: ["", x]}}`, "drivers.audio.command: the program (the first item) is empty"},
		{`{camera: {kind: command, command: [x], max_frame: 100}}`, "drivers.camera.max_frame: must be from 1024"},
		{`{camera: {kind: command, command: "rpicam-vid -o -"}}`, "drivers.camera.command:"},
	} {
		if _, err := robot.Decode(strings.NewReader(base + "drivers: " + c.drivers + "\n")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.drivers, err, c.want)
		}
	}
}

// The shipped robot configs run on the pure-Go chorusd that `make dist`
// cross-builds (issue 19): every driver they name is built into this
// build, not only "in some build".
func TestShippedConfigsRunOnThePureGoBuild(t *testing.T) {
	files, _ := filepath.Glob("../../firmware-configs/*.yaml")
	livingroom, _ := filepath.Glob("../../firmware-configs/livingroom/*.yaml")
	files = append(files, livingroom...)
	if len(files) < 4 {
		t.Fatalf("%d configs", len(files))
	}
	for _, f := range files {
		c, err := robot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if !Cameras.Built(c.Drivers.Camera.Kind) || !Audio.Built(c.Drivers.Audio.Kind) || !TTS.Built(c.Drivers.TTS.Kind) {
			t.Errorf("%s names camera %q, audio %q, tts %q: not all in the pure-Go build", f, c.Drivers.Camera.Kind, c.Drivers.Audio.Kind, c.Drivers.TTS.Kind)
		}
	}
}

// hearing.stt.after_stop (wyoming) is 0, derived, or within 100ms and
// hearing.stt.timeout.
func TestWyomingAfterStopChecked(t *testing.T) {
	base := "version: 1\ndevice: {id: d}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1\"}\ncompanion: {id: k, name: K, language: en}\n" +
		"drivers: {mic: {kind: command, command: [cat]}}\nhearing: {enabled: true, stt: {kind: wyoming, url: \"tcp://127.0.0.1:10300\", timeout: 10s, after_stop: %s}}\n"
	for _, c := range []struct{ after, want string }{
		{"0s", ""}, {"3s", ""}, {"10s", ""},
		{"50ms", "hearing.stt.after_stop: must be 0 (derived"},
		{"11s", "hearing.stt.after_stop: must be 0 (derived"},
	} {
		cfg, err := robot.Decode(strings.NewReader(fmt.Sprintf(base, c.after)))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(Check(cfg, Anywhere), "\n")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("after_stop %s: problems %q, want %q", c.after, got, c.want)
		}
	}
}
