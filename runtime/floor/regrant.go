// Recovery: a grant is published again until its speaker answers, and
// the floor catches up after its own reconnect (the package doc,
// "Recovery").

package floor

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// awaited is a grant whose speaker has not answered yet.
type awaited struct {
	g      protocol.TurnGrant
	since  time.Time
	timer  clock.Timer
	ballot *ballot // the ballot g decided (nil: a grant published again after a takeover)
}

// await starts publishing g again until its speaker answers.
func (f *Floor) await(g protocol.TurnGrant) {
	f.stopAwaiting()
	if g.SpeakerID() == "" {
		return
	}
	f.awaiting = &awaited{g: g, since: f.cfg.Clock.Now()}
	f.awaiting.timer = f.cfg.Clock.AfterFunc(f.cfg.RegrantEvery, func() { f.ctl.flag(flagRegrant) })
}

func (f *Floor) stopAwaiting() {
	if f.awaiting != nil && f.awaiting.timer != nil {
		f.awaiting.timer.Stop()
	}
	f.awaiting = nil
}

// retracted decides the awaited grant's ballot again when its speaker
// takes its vote back (a listen State for the granted message, sent when
// its model's streamed answer failed after the vote left): without it,
// the floor would grant it again until RegrantFor while it has nothing
// to say. Only the first retraction counts, and only before the speaker
// answered (the grant is still awaited).
func (f *Floor) retracted(s protocol.StateParams) bool {
	a := f.awaiting
	if a == nil || a.ballot == nil || a.g.MessageID != s.MessageID || a.g.SpeakerID() != s.From || s.State != protocol.Listen {
		return false
	}
	b := a.ballot
	f.stopAwaiting()
	b.votes[s.From] = s
	f.log.Info("floor: the granted speaker took its vote back; deciding again without it", "message", s.MessageID, "speaker", s.From)
	f.m.Recovered.WithLabelValues("retracted").Inc()
	f.decide(b, protocol.DecidedRetracted)
	return true
}

// regrant publishes the awaited grant again: its speaker acts on it once,
// and answers it again if it already did (issue 9, defect 2).
func (f *Floor) regrant() {
	a := f.awaiting
	if a == nil || !f.Active() {
		return
	}
	if f.cfg.Clock.Now().Sub(a.since) >= f.cfg.RegrantFor {
		f.log.Warn("floor: the granted speaker never answered; the room rests", "speaker", a.g.SpeakerID(),
			"message", a.g.MessageID, "waited", f.cfg.RegrantFor)
		f.stopAwaiting()
		return
	}
	a.timer = f.cfg.Clock.AfterFunc(f.cfg.RegrantEvery, func() { f.ctl.flag(flagRegrant) })
	if !f.present[a.g.SpeakerID()] {
		return // away: published again when it is back (onPresence)
	}
	if f.someoneSpeaks() {
		// The granted companion waits for the voice before it answers
		// (overlapped turns): not an answer missing yet.
		a.since = a.since.Add(f.cfg.RegrantEvery)
		return
	}
	f.m.Regrants.Inc()
	f.publish(a.g)
}

// someoneSpeaks reports whether a present member's voice is being heard.
func (f *Floor) someoneSpeaks() bool {
	now := f.cfg.Clock.Now()
	for id, until := range f.voices {
		if f.present[id] && now.Before(until) {
			return true
		}
	}
	return false
}

// reconnected runs after the floor's connection came back: the broker may
// have restarted and forgotten the retained claim, and nothing was heard
// while away. A deadline never counts the time the floor could not hear:
// each pending vote gets back the part of its window the outage took (its
// States are sent again by the companions until the floor hears them), and
// at least reconnectGrace. On a NATS cluster a lost node took the floor's
// connection and the others refused connects for 7 s; a deadline that
// counted them rested the room with every vote still owed.
func (f *Floor) reconnected() {
	f.deaf = false
	f.el.Reconnected()
	now := f.cfg.Clock.Now()
	for _, b := range f.pending {
		heardFrom := f.deafSince
		if b.arrived.After(heardFrom) {
			heardFrom = b.arrived
		}
		if at := now.Add(max(b.deadline.Sub(heardFrom), reconnectGrace)); at.After(b.deadline) {
			f.setDeadline(b, at)
		}
	}
}
