// Standby: the floor's part in the room's election (runtime/election) and
// the takeover of what the previous floor left (the package doc,
// "Standby").

package floor

import (
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// wake hands an election tick to the loop.
func (f *Floor) wake(t election.Tick) {
	switch t {
	case election.TickClaims:
		f.ctl.flag(flagClaims)
	case election.TickJoin:
		f.ctl.flag(flagJoin)
	case election.TickCheck:
		f.ctl.flag(flagClaimCheck)
	case election.TickLease:
		f.ctl.flag(flagLease)
	}
}

// onLeader follows the election: leading, the floor takes over what its
// predecessor left; standing by, it stops waiting for an answer.
func (f *Floor) onLeader(on bool) {
	if on {
		f.m.FloorActive.Set(1)
		f.takeOver()
		return
	}
	f.m.FloorActive.Set(0)
	f.stopAwaiting()
}

func (f *Floor) onGrant(g protocol.TurnGrant) {
	if f.Active() {
		return
	}
	f.done.Add(g.MessageID)
	for i, u := range f.unannounced {
		if u.MessageID == g.MessageID {
			f.unannounced = append(f.unannounced[:i], f.unannounced[i+1:]...)
			break
		}
	}
	// What the active floor decided is what the companions act on: a
	// takeover repeats that, not our shadow of it.
	if f.last.g.MessageID == g.MessageID || f.last.g.MessageID == "" {
		f.last.g = g
	}
}

// takeOver runs when the floor starts to lead: it announces the
// decisions the old floor did not.
func (f *Floor) takeOver() {
	published := false
	for _, g := range f.unannounced {
		f.log.Debug("floor: announced", "message", g.MessageID, "speaker", g.SpeakerID(), "reason", g.Reason, "active", true)
		// Nobody published it before: it is this floor's grant, counted
		// as one decided while leading is.
		f.m.Grants.WithLabelValues(g.Reason).Inc()
		f.publish(g)
		published = published || g.MessageID == f.last.g.MessageID
	}
	f.unannounced = nil
	// Take over the wait for the last grant's answer if nothing came after:
	// the old floor may have died before its grant or the answer got through.
	if f.last.seq == f.seq && f.last.g.SpeakerID() != "" {
		if !published {
			f.log.Debug("floor: announced", "message", f.last.g.MessageID, "speaker", f.last.g.SpeakerID(), "reason", f.last.g.Reason, "active", true)
			f.publish(f.last.g)
		}
		f.await(f.last.g)
	}
}
