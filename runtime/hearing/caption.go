package hearing

import (
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Captions: while a person speaks, each robot's ear reports its
// recogniser's newest hypothesis (heard reports of state partial); the
// arbiter forwards the newest words of the utterance under way, once, as
// the room's person on heard/{user}, so that a console shows what is
// being said as it is said without one line per robot. It follows the
// first robot that reported the utterance (switching robots mid-sentence
// would make the words jump) until that robot falls silent on it for
// captionStale (it went offline, its utterance was dropped): then another
// robot's words of the utterance take over. It forwards only words that
// changed, and nothing of an utterance already decided — no robot's, once
// the spans overlap: its Message has the final words. Nobody thinks on a
// caption (companions follow the ears' open and tentative reports).

// maxCaptions bounds the utterances followed at once.
const maxCaptions = 16

// captionStale is how long the robot followed may send no newer words
// before another robot's words of the same utterance take over (an ear
// sends them at most every 250 ms while they change).
const captionStale = time.Second

// caption is the utterance under way whose words are forwarded.
type caption struct {
	from, utt  string    // the robot followed and its utterance
	start, end time.Time // its span so far
	text       string    // the words forwarded last
	at         time.Time // when its last partial came (the arbiter's clock)
}

// onPartial forwards h's words if h is the newest of the utterance the
// arbiter follows, or of a new one.
func (a *Arbiter) onPartial(h protocol.Heard) {
	if !a.reports.Add(h.From + "\x00" + h.ID) {
		a.m.Duplicates.WithLabelValues("hearing", "heard").Inc()
		return
	}
	now := a.cfg.Clock.Now()
	a.captions = slices.DeleteFunc(a.captions, func(c *caption) bool { return now.Sub(c.at) > DefaultRemember })
	for _, d := range a.decided {
		if d.utts[h.From+"\x00"+h.Utterance] || !d.by[h.From] && a.overlaps(h.Start, h.End, d.start, d.end) {
			return // decided: its Message has the words
		}
	}
	var c *caption
	for _, o := range a.captions {
		switch {
		case o.from == h.From && o.utt == h.Utterance:
			c = o
		case o.from != h.From && a.overlaps(h.Start, h.End, o.start, o.end):
			if now.Sub(o.at) < captionStale {
				return // another robot's hearing of the utterance followed
			}
			o.from, o.utt, o.end = h.From, h.Utterance, time.Time{} // that robot fell silent: this one takes over
			c = o
		}
	}
	if c == nil {
		if len(a.captions) >= maxCaptions {
			a.captions = a.captions[1:]
		}
		c = &caption{from: h.From, utt: h.Utterance, start: h.Start}
		a.captions = append(a.captions, c)
	}
	if h.End.Before(c.end) {
		return // an older hypothesis, delivered late
	}
	c.end, c.at = h.End, now
	if h.Text == c.text || !a.cfg.Active() {
		return
	}
	c.text = h.Text
	fwd := protocol.Heard{From: a.cfg.User, ID: protocol.NewID(), Device: h.Device, Start: c.start, End: h.End, Text: h.Text,
		Confidence: protocol.NoConfidence, Level: protocol.MinLevel, Utterance: "voice-" + h.From + "-" + h.Utterance, State: protocol.HeardPartial}
	if len(fwd.Utterance) > protocol.MaxIDLen {
		fwd.Utterance = fwd.Utterance[:protocol.MaxIDLen]
	}
	if err := a.cfg.Room.QueueHeard(a.out, fwd); err != nil {
		a.log.Warn("caption not forwarded", "text", h.Text, "err", err)
		return
	}
	a.m.Heard.WithLabelValues("caption").Inc()
}

// captionsDecided stops following u's utterance: decided, by any robot
// that heard it.
func (a *Arbiter) captionsDecided(u *utterance) {
	a.captions = slices.DeleteFunc(a.captions, func(c *caption) bool {
		return a.overlaps(c.start, c.end, u.start, u.end) ||
			slices.ContainsFunc(u.reports, func(r protocol.Heard) bool { return r.From == c.from && r.Utterance == c.utt })
	})
}
