package robot

import (
	"strings"
	"testing"
	"time"
)

func TestHearingConfig(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\nroom: {name: lab, members: [k, h]}\ncompanion: {id: k, name: K, personality: calm, language: en}\n"
	c, err := Decode(strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hearing
	if h.Enabled || h.User != "user" || h.Window != 150*time.Millisecond || h.Ear.Tail != 300*time.Millisecond ||
		*h.Ear.VAD.Aggressiveness != 2 || h.Ear.VAD.Hangover != 500*time.Millisecond || h.Ear.VAD.MaxUtterance != 15*time.Second ||
		c.Drivers.Mic.Kind != "none" || c.Drivers.Mic.SampleRate != 16000 {
		t.Fatalf("defaults: %+v, mic %+v", h, c.Drivers.Mic)
	}
	if !c.Scheme().MayPublish("floor", c.Scheme().Message("lab", "user")) {
		t.Error("the room's floor may not publish what it heard as the person")
	}
	for _, tt := range []struct{ yaml, field string }{
		{"hearing: {enabled: true, stt: {kind: pocketsphinx}}\ndrivers: {mic: {kind: command, command: [arecord, -q, -r, \"{rate}\"]}}\n", ""},
		{"hearing: {enabled: true, user: guest, window: 0s, vad: {aggressiveness: 0}}\ndrivers: {mic: {kind: file, path: in.wav}}\n", "hearing.stt.kind:"},
		{"hearing: {enabled: true, stt: {kind: wyoming}}\n", "drivers.mic.kind:"},
		{"hearing: {user: k}\n", "hearing.user:"},
		{"hearing: {user: floor}\n", "hearing.user:"},
		{"hearing: {user: \"a b\"}\n", "hearing.user:"},
		{"hearing: {window: 5s}\n", "hearing.window:"},
		{"hearing: {tail: -1s}\n", "hearing.tail:"},
		{"hearing: {vad: {aggressiveness: 4}}\n", "hearing.vad.aggressiveness:"},
		{"hearing: {vad: {hangover: 10ms}}\n", "hearing.vad.hangover:"},
		{"hearing: {vad: {max_utterance: 10h}}\n", "hearing.vad.max_utterance:"},
		{"hearing: {vad: {min_utterance: 2s, max_utterance: 1s}}\n", "hearing.vad.max_utterance:"},
		{"hearing: {stt: {timeout: 1ms}}\n", "hearing.stt.timeout:"},
		{"drivers: {mic: {sample_rate: 4000}}\n", "drivers.mic.sample_rate:"},
		{"drivers: {mic: {kind: file, command: [arecord]}}\n", "drivers.mic.command:"},
		{"hearing: {surprise: 1}\n", "surprise"},
		// Who is speaking.
		{"hearing: {people: {sam: [Samuel, サム]}, voice: {kind: localai, url: \"http://127.0.0.1:8080\", model: ecapa}}\nmemory: {dir: /tmp/m}\n", ""},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://127.0.0.1:8080\", model: ecapa}}\n", "hearing.voice: needs the memory section"},
		{"hearing: {voice: {kind: localai, url: \"http://127.0.0.1:8080\", model: ecapa}}\nmemory: {dir: /tmp/m}\n", "hearing.people: hearing.voice is on"},
		{"hearing: {people: {sam: []}, voice: {kind: resemblyzer}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.kind:"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"ftp://x\", model: ecapa}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.url:"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://x\"}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.model:"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://x\", model: m, threshold: 0.2, sure: 0.3}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.sure:"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://x\", model: m, wait: 5s}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.wait:"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://x\", model: m, enrol: 50}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.enrol:"},
		{"hearing: {people: {k: []}}\n", "hearing.people.k:"},
		{"hearing: {people: {user: []}}\n", "hearing.people.user:"},
		{"hearing: {people: {\"a b\": []}}\n", "hearing.people.a b:"},
		{"hearing: {people: {sam: [\"\"]}}\n", "hearing.people.sam:"},
		{"hearing: {people: {alice: [Al], bob: [al]}}\n", "hearing.people.bob: the name \"al\" is alice's too"},
		{"hearing: {people: {alice: [bob], bob: []}}\n", "hearing.people.bob: the name \"bob\" is alice's too"},
		{"hearing: {people: {sam: []}, voice: {kind: localai, url: \"http://x\", model: m, threshold: .nan}}\nmemory: {dir: /tmp/m}\n", "hearing.voice.threshold:"},
	} {
		wantDecode(t, tt.yaml, base+tt.yaml, tt.field)
	}
}

// The hearing section is one mapping of two halves: every key lands in
// its owner's half, a misspelt key of either half is named with the
// closest of the whole section's, and each half's problems carry the
// section's path.
func TestHearingSectionHalves(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\nroom: {name: lab, members: [k, h]}\ncompanion: {id: k, name: K, personality: calm, language: en}\n"
	c, err := Decode(strings.NewReader(base + "hearing: {enabled: true, user: guest, window: 1s, tail: 1s, stt: {kind: pocketsphinx, timeout: 9s}, " +
		"vad: {hangover: 700ms}, wake: {kind: wyoming, url: \"tcp://127.0.0.1:10400\", listen_for: 4s}}\ndrivers: {mic: {kind: file, path: in.wav}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hearing
	if !h.Enabled || h.User != "guest" || h.Window != time.Second {
		t.Errorf("the room's half: %+v", h.Settings)
	}
	if e := h.Ear; e.Tail != time.Second || e.STT.Kind != "pocketsphinx" || e.STT.Timeout != 9*time.Second ||
		e.VAD.Hangover != 700*time.Millisecond || e.Wake.Kind != "wyoming" || e.Wake.ListenFor != 4*time.Second {
		t.Errorf("the ear's half: %+v", e)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"hearing: {enabld: true}\n", `hearing.enabld: unknown field (did you mean "enabled"?)`},
		{"hearing: {windw: 1s}\n", `hearing.windw: unknown field (did you mean "window"?)`},
		{"hearing: {tial: 1s}\n", `hearing.tial: unknown field (did you mean "tail"?)`},
		{"hearing: {vad: {hangovr: 1s}}\n", `hearing.vad.hangovr: unknown field (did you mean "hangover"?)`},
		{"hearing: {stt: {timeot: 1s}}\n", `hearing.stt.timeot: unknown field (did you mean "timeout"?)`},
		{"hearing: {vad: {hangover: soon}}\n", `hearing.vad.hangover: must be a duration such as 3s or 500ms, got "soon"`},
		{"hearing: {stt: soon}\n", `hearing.stt: must be a mapping, got "soon"`},
		{"hearing: {window: 3s, vad: {hangover: 6s}}\n", "hearing.window: must be from 0 to 2s, got 3s"},
		{"hearing: {window: 3s, vad: {hangover: 6s}}\n", "hearing.vad.hangover: must be from 100ms to 5s, got 6s"},
	} {
		wantDecode(t, tt.yaml, base+tt.yaml, tt.want)
	}
}
