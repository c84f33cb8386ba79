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
	} {
		wantDecode(t, tt.yaml, base+tt.yaml, tt.field)
	}
}
