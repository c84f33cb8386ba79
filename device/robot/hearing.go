// The hearing section's fields of one robot: its ear's, its voice
// activity detector's, its speech to text's and its wake word's (the
// room's, user and window, are runtime/hearing's). The section's shape is
// runtime/hearing's; its device fields are filled here from their owners'
// defaults (device/ear, drivers/vad) and checked here.

package robot

import (
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/device/ear"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// DefaultWake is the wake word's kind unless one is named: none, the room
// listens whenever no robot speaks.
const DefaultWake = "none"

func (c *Config) hearingDefaults() {
	h := &c.Hearing
	if h.Tail == 0 {
		h.Tail = ear.DefaultTail
	}
	def(&h.Wake.Kind, DefaultWake)
	if h.Wake.ListenFor == 0 {
		h.Wake.ListenFor = ear.DefaultListenFor
	}
	if h.STT.Timeout == 0 {
		h.STT.Timeout = ear.DefaultTimeout
	}
	v := &c.Hearing.VAD
	if v.Aggressiveness == nil {
		a := int(vad.Aggressive)
		v.Aggressiveness = &a
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&v.PreRoll, vad.DefaultPreRoll}, {&v.Hangover, vad.DefaultHangover},
		{&v.MinUtterance, vad.DefaultMinLength}, {&v.MaxUtterance, vad.DefaultMaxLength},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
}

// validateHearing checks the section's device fields (p is its view).
func (c *Config) validateHearing(p *settings.Problems) {
	h := c.Hearing
	if h.Tail < 0 || h.Tail > 5*time.Second {
		p.Add("tail", "must be from 0 to 5s, got %v", h.Tail)
	}
	if h.STT.Timeout < 100*time.Millisecond || h.STT.Timeout > 2*time.Minute {
		p.Add("stt.timeout", "must be from 100ms to 2m, got %v", h.STT.Timeout)
	}
	v := h.VAD
	if a := v.Aggressiveness; a != nil && (*a < int(vad.Quality) || *a > int(vad.VeryAggressive)) {
		p.Add("vad.aggressiveness", "must be from 0 to 3, got %d", *a)
	}
	if v.PreRoll < 0 || v.PreRoll > 2*time.Second {
		p.Add("vad.pre_roll", "must be from 0 to 2s, got %v", v.PreRoll)
	}
	if v.Hangover < 100*time.Millisecond || v.Hangover > 5*time.Second {
		p.Add("vad.hangover", "must be from 100ms to 5s, got %v", v.Hangover)
	}
	if v.MinUtterance < 0 || v.MinUtterance > 10*time.Second {
		p.Add("vad.min_utterance", "must be from 0 to 10s, got %v", v.MinUtterance)
	}
	if v.MaxUtterance < time.Second || v.MaxUtterance > 5*time.Minute || v.MaxUtterance <= v.MinUtterance {
		p.Add("vad.max_utterance", "must be from 1s to 5m and above min_utterance (%v), got %v", v.MinUtterance, v.MaxUtterance)
	}
	if h.Wake.ListenFor < time.Second || h.Wake.ListenFor > 5*time.Minute {
		p.Add("wake.listen_for", "must be from 1s to 5m, got %v", h.Wake.ListenFor)
	}
	for i, n := range h.Wake.Names {
		if n == "" || len(n) > 64 || strings.ContainsAny(n, "\x00\n") {
			p.Add(fmt.Sprintf("wake.names[%d]", i), "must be a wake word's name of 1 to 64 bytes, got %q", n)
		}
	}
}
