package ear

import (
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Eager end of turn (docs/hearing.md). When the person has paused for
// Config.Eager and the engine's newest hypothesis has stood still for
// stableFor, the ear tells the room the words so far in a report of state
// tentative: the companions think on them while the segmenter waits out
// the rest of the hangover and the engine its final transcript. Words
// that promise more (the Judge would wait longer than the usual pause
// after them) and a greeting alone are not told: the person is likely to
// go on. When the person goes on, or the hypothesis says other words, a
// report of state resumed takes the tentative one back; the utterance's transcript (or its drop)
// ends it as before. Nothing is spoken on a tentative report: the room
// answers the Message of the transcript.

// stableFor is how long the newest hypothesis must stand before it is
// told: a recogniser hands the last word over a little after it was said.
const stableFor = 100 * time.Millisecond

// eager tells the room the words so far at a pause, and takes them back
// when the person goes on.
func (e *Ear) eager() {
	if e.cfg.Eager <= 0 || e.sess == nil {
		return
	}
	quiet := e.cfg.Segmenter.Quiet()
	switch {
	case e.told != "" && (quiet == 0 || !endofturn.SameWords(e.said, e.told)):
		e.report(protocol.Heard{Start: e.uttFrom, End: e.now, Level: protocol.MinLevel, Utterance: e.utt, State: protocol.HeardResumed})
		e.m.Hearing.WithLabelValues("resumed").Inc()
		e.log.Debug("eager end of turn: the person went on", "told", e.told, "so_far", e.said)
		e.told = ""
	case e.told == "" && strings.TrimSpace(e.said) != "" && quiet >= e.cfg.Eager && e.now.Sub(e.saidAt) >= stableFor && e.complete(e.said):
		e.told = e.said
		e.report(protocol.Heard{Start: e.uttFrom, End: e.now.Add(-quiet), Level: protocol.MinLevel, Utterance: e.utt, State: protocol.HeardTentative,
			Text: clip(e.said, protocol.MaxHeardText)})
		e.m.Hearing.WithLabelValues("tentative").Inc()
		e.log.Debug("eager end of turn: the words so far told the room", "text", e.said, "quiet", quiet)
	}
}

// captionEvery is how often at most the ear tells the room the words so
// far of an utterance under way (a partial report: captions); the newest
// goes out when the time has passed.
const captionEvery = 250 * time.Millisecond

// caption tells the room the newest hypothesis of the utterance under
// way, in a report of state partial, at most one every captionEvery and
// only when the words changed: the room's floor forwards it, and the
// console shows what the person says as they say it. Nobody thinks on
// it.
func (e *Ear) caption() {
	if e.sess == nil || e.utt == "" || strings.TrimSpace(e.said) == "" || e.said == e.shown || e.now.Sub(e.shownAt) < captionEvery {
		return
	}
	e.shown, e.shownAt = e.said, e.now
	e.report(protocol.Heard{Start: e.uttFrom, End: e.now, Level: protocol.MinLevel, Utterance: e.utt, State: protocol.HeardPartial,
		Text: clip(e.said, protocol.MaxHeardText)})
	e.m.Hearing.WithLabelValues("partial").Inc()
}

// complete reports whether words may end what the person says: they are
// more than a greeting (endofturn.Opening), and the Judge would not wait
// longer after them than after words that say nothing (its plain pause:
// its pause after no words).
func (e *Ear) complete(words string) bool {
	if endofturn.Opening(words) {
		return false
	}
	return e.cfg.EndOfTurn == nil || e.cfg.EndOfTurn.Pause(words) <= max(e.pause, e.cfg.EndOfTurn.Pause(""))
}
