package ear

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/settings"
	"go.yaml.in/yaml/v3"
)

// The body's half of the hearing section fills what is unset from its
// owners' defaults and keeps what is set.
func TestSettingsDefaults(t *testing.T) {
	var s Settings
	s.SetDefaults()
	v := s.VAD
	for _, d := range []struct {
		field     string
		got, want any
	}{
		{"tail", s.Tail, DefaultTail},
		{"stt.timeout", s.STT.Timeout, DefaultTimeout},
		{"wake.kind", s.Wake.Kind, DefaultWake},
		{"wake.listen_for", s.Wake.ListenFor, DefaultListenFor},
		{"vad.aggressiveness", *v.Aggressiveness, int(vad.Aggressive)},
		{"vad.pre_roll", v.PreRoll, vad.DefaultPreRoll},
		{"vad.hangover", v.Hangover, vad.DefaultHangover},
		{"vad.hangover_unfinished", v.HangoverUnfinished, DefaultHangoverUnfinished},
		{"vad.hangover_complete", v.HangoverComplete, DefaultHangoverComplete},
		{"vad.hangover_plain", v.HangoverPlain, DefaultHangoverPlainEager},
		{"vad.eager", v.Eager, Eager{After: DefaultEager}},
		{"vad.min_utterance", v.MinUtterance, vad.DefaultMinLength},
		{"vad.max_utterance", v.MaxUtterance, vad.DefaultMaxLength},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, want %v", d.field, d.got, d.want)
		}
	}
	zero := 0
	set := Settings{Tail: time.Second, STT: STT{Timeout: time.Minute}, Wake: Wake{Kind: "wyoming", ListenFor: 3 * time.Second},
		VAD: VAD{Aggressiveness: &zero, PreRoll: time.Second, Hangover: 700 * time.Millisecond, HangoverUnfinished: 2 * time.Second,
			HangoverComplete: 200 * time.Millisecond, HangoverPlain: 800 * time.Millisecond, Eager: Eager{After: 150 * time.Millisecond}, MinUtterance: time.Second, MaxUtterance: time.Minute}}
	got := set
	got.SetDefaults()
	if got.Tail != set.Tail || got.STT != set.STT || got.Wake.Kind != set.Wake.Kind || got.Wake.ListenFor != set.Wake.ListenFor || got.VAD != set.VAD {
		t.Errorf("set fields changed: %+v, want %+v", got, set)
	}
	// The words' pauses hold a hangover set beyond their defaults between them.
	for _, h := range []time.Duration{vad.MinHangover, vad.MaxHangover} {
		s := Settings{VAD: VAD{Hangover: h}}
		s.SetDefaults()
		if v := s.VAD; v.HangoverComplete > h || v.HangoverUnfinished < h || v.Eager.After >= v.HangoverComplete || v.HangoverPlain < h || v.HangoverPlain > v.HangoverUnfinished {
			t.Errorf("hangover %v: complete %v, unfinished %v, plain %v, eager %v", h, v.HangoverComplete, v.HangoverUnfinished, v.HangoverPlain, v.Eager.After)
		}
	}
	// Without eager end of turn, plain words end on the hangover: the
	// robots think only on the Message, and a longer wait would be theirs.
	off := Settings{VAD: VAD{Eager: Eager{Off: true}}}
	off.SetDefaults()
	if off.VAD.HangoverPlain != vad.DefaultHangover {
		t.Errorf("eager off: hangover_plain %v, want the hangover %v", off.VAD.HangoverPlain, vad.DefaultHangover)
	}
}

// Check names each bad field by its path in the section; the hangover is
// held to its declared bounds, both ends included.
func TestSettingsCheck(t *testing.T) {
	four := 4
	for _, tt := range []struct {
		name string
		edit func(*Settings)
		want []string // nil: no problem
	}{
		{"defaults", func(*Settings) {}, nil},
		{"hangover at its least", func(s *Settings) { s.VAD.Hangover = vad.MinHangover }, nil},
		{"hangover at its most", func(s *Settings) { s.VAD.Hangover = vad.MaxHangover }, nil},
		{"hangover too short", func(s *Settings) { s.VAD.Hangover = vad.MinHangover - time.Millisecond },
			[]string{"vad.hangover: must be from 100ms to 5s, got 99ms"}},
		{"hangover too long", func(s *Settings) { s.VAD.Hangover = vad.MaxHangover + time.Second },
			[]string{"vad.hangover: must be from 100ms to 5s, got 6s"}},
		{"words' pauses at their bounds", func(s *Settings) { s.VAD.HangoverComplete, s.VAD.HangoverUnfinished = vad.MinHangover, vad.MaxHangover }, nil},
		{"unfinished below the hangover", func(s *Settings) { s.VAD.HangoverUnfinished = 400 * time.Millisecond },
			[]string{"vad.hangover_unfinished: must be from vad.hangover (500ms) to 5s, got 400ms"}},
		{"plain below the hangover", func(s *Settings) { s.VAD.HangoverPlain = 400 * time.Millisecond },
			[]string{"vad.hangover_plain: must be from vad.hangover (500ms) to vad.hangover_unfinished (1.5s), got 400ms"}},
		{"plain above unfinished", func(s *Settings) { s.VAD.HangoverPlain = 2 * time.Second },
			[]string{"vad.hangover_plain: must be from vad.hangover (500ms) to vad.hangover_unfinished (1.5s), got 2s"}},
		{"complete above the hangover", func(s *Settings) { s.VAD.HangoverComplete = 600 * time.Millisecond },
			[]string{"vad.hangover_complete: must be from 100ms to vad.hangover (500ms), got 600ms"}},
		{"eager off", func(s *Settings) { s.VAD.Eager = Eager{Off: true} }, nil},
		{"eager at its least", func(s *Settings) { s.VAD.Eager.After = vad.MinHangover / 2 }, nil},
		{"eager too short", func(s *Settings) { s.VAD.Eager.After = 10 * time.Millisecond },
			[]string{"vad.eager: must be from 50ms to below vad.hangover_complete (300ms), or off, got 10ms"}},
		{"eager not before the utterance ends", func(s *Settings) { s.VAD.Eager.After = 300 * time.Millisecond },
			[]string{"vad.eager: must be from 50ms to below vad.hangover_complete (300ms), or off, got 300ms"}},
		{"tail", func(s *Settings) { s.Tail = -time.Second }, []string{"tail: must be from 0 to 5s, got -1s"}},
		{"stt timeout", func(s *Settings) { s.STT.Timeout = time.Millisecond }, []string{"stt.timeout: must be from 100ms to 2m, got 1ms"}},
		{"aggressiveness", func(s *Settings) { s.VAD.Aggressiveness = &four }, []string{"vad.aggressiveness: must be from 0 to 3, got 4"}},
		{"pre roll", func(s *Settings) { s.VAD.PreRoll = 3 * time.Second }, []string{"vad.pre_roll: must be from 0 to 2s, got 3s"}},
		{"min utterance", func(s *Settings) { s.VAD.MinUtterance = 11 * time.Second }, []string{"vad.min_utterance: must be from 0 to 10s, got 11s"}},
		{"max utterance not above min", func(s *Settings) { s.VAD.MinUtterance, s.VAD.MaxUtterance = 2*time.Second, time.Second }, []string{
			"vad.max_utterance: must be from 1s to 5m and above min_utterance (2s), got 1s"}},
		{"max utterance", func(s *Settings) { s.VAD.MaxUtterance = time.Hour }, []string{
			"vad.max_utterance: must be from 1s to 5m and above min_utterance (300ms), got 1h0m0s"}},
		{"listen for", func(s *Settings) { s.Wake.ListenFor = time.Millisecond }, []string{"wake.listen_for: must be from 1s to 5m, got 1ms"}},
		{"wake names", func(s *Settings) { s.Wake.Names = []string{"okay_nabu", "", strings.Repeat("x", 65)} }, []string{
			`wake.names[1]: must be a wake word's name of 1 to 64 bytes, got ""`,
			`wake.names[2]: must be a wake word's name of 1 to 64 bytes, got "` + strings.Repeat("x", 65) + `"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s Settings // edited as a file sets it, then the defaults filled
			tt.edit(&s)
			s.SetDefaults()
			var p settings.Problems
			s.Check(&p)
			if got := p.List(); !slices.Equal(got, tt.want) {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
}

// The VAD's settings make the segmenter the ear runs.
func TestVADSegmenter(t *testing.T) {
	var s Settings
	s.SetDefaults()
	s.VAD.Hangover = 800 * time.Millisecond
	seg := s.VAD.Segmenter(16000)
	if seg.Detector == nil || seg.PreRoll != vad.DefaultPreRoll || seg.Hangover != 800*time.Millisecond ||
		seg.MinLength != vad.DefaultMinLength || seg.MaxLength != vad.DefaultMaxLength {
		t.Fatalf("segmenter %+v", seg)
	}
}

// hearing.vad.eager reads a pause or off, and says what is wrong with
// anything else; what it writes reads back the same.
func TestEagerYAML(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Eager
		err  string
	}{
		{"eager: 150ms", Eager{After: 150 * time.Millisecond}, ""},
		{"eager: off", Eager{Off: true}, ""},
		{"eager: false", Eager{Off: true}, ""},
		{"eager: soon", Eager{}, `hearing.vad.eager: want a pause (200ms) or off, got "soon"`},
		{"eager: [1]", Eager{}, "hearing.vad.eager: want a pause"},
	} {
		var v VAD
		err := yaml.Unmarshal([]byte(tc.in), &v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || v.Eager != tc.want {
			t.Errorf("%s: %+v, %v", tc.in, v.Eager, err)
			continue
		}
		out, err := yaml.Marshal(v.Eager)
		var back VAD
		if err != nil || yaml.Unmarshal([]byte("eager: "+string(out)), &back) != nil || back.Eager != tc.want {
			t.Errorf("%s: wrote %q, read back %+v", tc.in, out, back.Eager)
		}
	}
}
