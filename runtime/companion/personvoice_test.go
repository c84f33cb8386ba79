package companion_test

import (
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// kyokoHears publishes kyoko's ear's report of a person's utterance utt in
// state (open, dropped, or "" for its transcript), begun at start.
func (r *voiceRig) kyokoHears(utt, state string, start time.Time) {
	r.t.Helper()
	h := protocol.Heard{From: "kyoko", ID: protocol.NewID(), Device: "kyoko-body", Start: start, End: start,
		Confidence: protocol.NoConfidence, Level: -30, Utterance: utt, State: state}
	if state == "" {
		h.Text = "my sister is coming to visit and we will bake bread"
	}
	if err := r.kyoko.SendHeard(r.ctx, h); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
	time.Sleep(20 * time.Millisecond)
}

// grantedAfterKyoko has kyoko speak for a second and hana granted the
// answer, prepared; it returns kyoko's message.
func (r *voiceRig) grantedAfterKyoko() string {
	id := r.kyokoSpeaks(time.Second)
	r.grant(id)
	r.prepared()
	return id
}

// A robot never begins over a person: while a robot's ear says a
// person's utterance is under way, hana's granted turn waits, and starts
// the pause after the utterance is dropped — after its transcript, only
// once the person's Message has had its second to come.
func TestAPersonSpeakingHoldsTheTurn(t *testing.T) {
	for _, end := range []string{protocol.HeardDropped, ""} {
		t.Run("ended by "+map[string]string{"": "its transcript", protocol.HeardDropped: "its drop"}[end], func(t *testing.T) {
			r := newVoiceRig(t, protocol.BargeInSentence)
			id := r.grantedAfterKyoko()
			r.kyokoEnds(id)
			utt := protocol.NewID()
			r.kyokoHears(utt, protocol.HeardOpen, r.clk.Now())
			r.advance(pause)
			r.advance(3 * time.Second)
			if r.started() {
				t.Fatal("hana began while a person was speaking")
			}
			r.kyokoHears(utt, end, r.clk.Now().Add(-3*time.Second))
			if end == "" { // the person's Message is on its way: it would give the turn up
				r.advance(pause)
				if r.started() {
					t.Fatal("hana began just before the person's Message could come")
				}
				r.advance(time.Second)
			}
			r.advance(pause)
			waitFor(t, r.started)
			r.hanaSaid()
		})
	}
}

// An open report copied after its utterance ended (a redelivery) holds
// nobody; one whose end was lost holds the turn no longer than its bound.
func TestAnEndedUtteranceHoldsNobody(t *testing.T) {
	t.Run("copied after its end", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.grantedAfterKyoko()
		utt := protocol.NewID()
		r.kyokoHears(utt, protocol.HeardOpen, r.clk.Now())
		r.kyokoHears(utt, protocol.HeardDropped, r.clk.Now())
		r.kyokoHears(utt, protocol.HeardOpen, r.clk.Now())
		r.kyokoEnds(id)
		r.advance(pause)
		waitFor(t, r.started)
	})
	t.Run("its end lost", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.grantedAfterKyoko()
		r.kyokoEnds(id)
		r.kyokoHears(protocol.NewID(), protocol.HeardOpen, r.clk.Now())
		r.advance(19 * time.Second)
		if r.started() {
			t.Fatal("hana began while a person was speaking")
		}
		r.advance(time.Second)
		waitFor(t, r.started)
	})
}

// Words that began over a person already speaking stop at once: the
// grant won the race with the person's first words (their open report
// came after hana had started). Words that began before the person did
// are not stopped by it (the ear's gate keeps a new utterance from the
// room while a robot speaks).
func TestWordsBegunOverAPersonYield(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  time.Duration // the person began this long before hana
		dropped bool          // the utterance is dropped 20 ms later (a robot's voice: its status closed the ear)
		stops   []string
	}{
		{"the person began first", 100 * time.Millisecond, false, []string{"immediate"}},
		{"the person began first, told 500 ms in", 500 * time.Millisecond, false, []string{"immediate"}},
		{"hana's own voice, told at its first sound, then dropped", -20 * time.Millisecond, true, nil},
		{"hana began well before the person", -2 * time.Second, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newVoiceRig(t, protocol.BargeInSentence)
			id := r.grantedAfterKyoko()
			r.kyokoEnds(id)
			r.advance(pause)
			waitFor(t, r.started)
			began := r.clk.Now()
			r.hanaSaid()
			if tc.before >= 0 {
				r.clk.Advance(tc.before) // the report comes this long after the person's first sound
			}
			utt := protocol.NewID()
			r.kyokoHears(utt, protocol.HeardOpen, began.Add(-tc.before))
			if tc.dropped {
				r.advance(20 * time.Millisecond)
				r.kyokoHears(utt, protocol.HeardDropped, began.Add(-tc.before))
			}
			r.advance(400 * time.Millisecond) // an utterance told at its first sound yields the words if it goes on
			if tc.stops != nil {
				waitFor(t, func() bool { _, _, n, _ := r.dev.counts(); return n == len(tc.stops) })
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			r.dev.mu.Lock()
			stops := append([]string(nil), r.dev.stops...)
			r.dev.mu.Unlock()
			if len(stops) != len(tc.stops) || len(stops) > 0 && stops[0] != tc.stops[0] {
				t.Errorf("speak.stop %q, want %q", stops, tc.stops)
			}
		})
	}
}

// The person's Message ends the wait its transcript began: the room
// answers it without the second's hold (that hold is only for a turn
// granted before the Message came).
func TestThePersonsMessageEndsTheWait(t *testing.T) {
	r := newVoiceRig(t, protocol.BargeInSentence)
	utt := protocol.NewID()
	r.kyokoHears(utt, protocol.HeardOpen, r.clk.Now())
	r.kyokoHears(utt, "", r.clk.Now())
	m := protocol.NewMessage(protocol.NewID(), "user", nil, "my sister is coming to visit and we will bake bread", "")
	if err := r.user.SendMessage(r.ctx, m); err != nil {
		t.Fatal(err)
	}
	r.mem.Settle()
	waitFor(t, func() bool {
		select {
		case v := <-r.voted:
			return v == m.Params.ID
		default:
			return false
		}
	})
	r.grant(m.Params.ID)
	r.prepared()
	r.advance(pause)
	waitFor(t, r.started)
}

// A report that an utterance began long ago holds nothing and stops
// nobody (a report delayed or forged), and copies of an open report do
// not push its bound on: 20 s from the first at most.
func TestStaleAndCopiedOpenReports(t *testing.T) {
	t.Run("began long ago", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.grantedAfterKyoko()
		r.kyokoEnds(id)
		r.advance(pause)
		waitFor(t, r.started)
		r.hanaSaid()
		r.kyokoHears(protocol.NewID(), protocol.HeardOpen, r.clk.Now().Add(-21*time.Hour))
		time.Sleep(100 * time.Millisecond)
		if _, _, n, _ := r.dev.counts(); n != 0 {
			t.Fatal("a stale open report stopped hana")
		}
	})
	t.Run("copied every 8 s", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.grantedAfterKyoko()
		r.kyokoEnds(id)
		utt := protocol.NewID()
		for range 3 {
			r.kyokoHears(utt, protocol.HeardOpen, r.clk.Now())
			r.advance(8 * time.Second)
		}
		// 24 s after the first copy: its bound (20 s) has passed.
		r.advance(pause)
		waitFor(t, r.started)
	})
}
