// The ballots: per Message, who votes, until when, and the grant that
// ends it (docs/protocol.md, "Floor control (turn mode)", steps 1-4).

package floor

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// earlyState is a State that arrived before its Message. MQTT orders
// messages per publisher only: a broker that fans out on several threads
// (mochi) or a cluster can hand the floor a companion's State before the
// Message it answers. Such a State waits (for one vote timeout) for its
// Message instead of being dropped. Each voter keeps only its newest, so
// a flood from one voter can never push out another's.
type earlyState struct {
	s  protocol.StateParams
	at time.Time
}

type ballot struct {
	msg          protocol.Message
	arrived      time.Time
	deadline     time.Time
	seq          uint64
	participants map[string]bool
	votes        map[string]protocol.StateParams
	timer        clock.Timer
	// left are participants that went offline before they voted. A broker
	// that stops sends every client's Last Will: the companions "leave"
	// while they are still thinking, and vote once the broker is back.
	left map[string]bool
	// restedAt is when the floor first decided this message for nobody
	// while votes were owed; zero otherwise (see lateVote).
	restedAt time.Time
}

// owes reports whether a vote from voter may still count for b after b
// was decided for nobody: voter is a member of the room that did not
// vote and did not write the message. It need not have been a
// participant: after a broker restart the floor hears the companions'
// votes before their presence, which the stopping broker had just marked
// offline with their Last Wills.
func (f *Floor) owes(b *ballot, voter string) bool {
	_, voted := b.votes[voter]
	return !voted && voter != b.msg.Params.From && f.cfg.Room.IsMember(voter)
}

// lastGrant is the newest grant and the message count when it was made.
type lastGrant struct {
	g   protocol.TurnGrant
	seq uint64
}

func (f *Floor) onMessage(ctx context.Context, m protocol.Message) {
	id := m.Params.ID
	if _, dup := f.pending[id]; dup || f.decided.Has(id) {
		f.m.DroppedStates.WithLabelValues("duplicate_message").Inc()
		return
	}
	// Any new message ends the wait for the last grant's answer: it is the
	// answer, or newer words that void it; and newer words void the votes
	// still owed for a message the room rested on.
	f.stopAwaiting()
	f.rested = nil
	for _, b := range f.sortedPending() {
		if !b.restedAt.IsZero() { // decided again on late votes: newer words void them
			f.finish(b, Decision{Reason: protocol.ReasonRest}, protocol.DecidedDeadline)
		}
	}
	f.seq++
	if len(f.lastSpoke) >= maxLastSpoke {
		f.lastSpoke = map[string]uint64{}
	}
	if m.Params.From != "" { // "" when adopted from its States
		f.lastSpoke[m.Params.From] = f.seq
	}
	for len(f.pending) >= f.cfg.MaxPending {
		f.evictOldest()
	}
	now := f.cfg.Clock.Now()
	b := &ballot{msg: m, arrived: now, seq: f.seq, participants: map[string]bool{}, votes: map[string]protocol.StateParams{}, left: map[string]bool{}}
	for c := range f.present {
		if c != m.Params.From {
			b.participants[c] = true
		}
	}
	f.pending[id] = b
	if f.ended && f.cfg.Room.IsMember(m.Params.From) {
		f.finish(b, Decision{Reason: protocol.ReasonRest}, protocol.DecidedAllVoted) // ended: nobody answers the robots
		return
	}
	f.ended = false // a person spoke: the room talks again
	if len(b.participants) == 0 {
		f.decide(b, protocol.DecidedAllVoted)
		return
	}
	f.setDeadline(b, now.Add(f.window(b)))
	for voter, e := range f.early {
		if e.s.MessageID != id {
			continue
		}
		delete(f.early, voter)
		if _, open := f.pending[id]; open {
			f.onState(ctx, e.s)
		}
	}
}

// window is how long b's vote may take: the slowest announced think time
// of its participants plus a margin, within [VoteTimeout, VoteCeiling].
func (f *Floor) window(b *ballot) time.Duration {
	w := f.cfg.VoteTimeout
	for p := range b.participants {
		if t := f.think[p]; t > 0 {
			w = max(w, t+thinkMargin)
		}
	}
	return min(w, f.cfg.VoteCeiling)
}

func (f *Floor) setDeadline(b *ballot, at time.Time) {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.deadline = at
	id := b.msg.Params.ID
	b.timer = f.cfg.Clock.AfterFunc(at.Sub(f.cfg.Clock.Now()), func() { f.ctl.deadline(id) })
}

// keepEarly holds a State whose Message has not arrived yet: the newest
// per voter, for one vote timeout. The first State for a message starts
// its OrphanGrace: if the message is still missing then, it was lost on
// its way to the floor, and the States open the ballot (adopt).
func (f *Floor) keepEarly(s protocol.StateParams) {
	if old, ok := f.early[s.From]; ok && old.s.MessageID != s.MessageID {
		f.m.DroppedStates.WithLabelValues("unknown_message").Inc()
	}
	if id := s.MessageID; !f.orphans[id] && len(f.orphans) < maxOrphans {
		f.orphans[id] = true
		f.cfg.Clock.AfterFunc(f.cfg.OrphanGrace, func() { f.ctl.orphan(id) })
	}
	f.early[s.From] = earlyState{s: s, at: f.cfg.Clock.Now()}
	for voter, e := range f.early {
		if f.cfg.Clock.Now().Sub(e.at) >= f.cfg.VoteTimeout {
			delete(f.early, voter)
			f.m.DroppedStates.WithLabelValues("unknown_message").Inc()
		}
	}
}

// adopt opens the ballot for message id from the States that name it: the
// message itself never reached the floor (a broker dropped it), but the
// companions that heard it voted, and the floor needs no more than its id.
// Its sender is unknown, so every present member is a participant; the
// deadline covers the one that sent it.
func (f *Floor) adopt(id string) {
	delete(f.orphans, id)
	if _, open := f.pending[id]; open || f.decided.Has(id) {
		return
	}
	voted := false
	for _, e := range f.early {
		voted = voted || e.s.MessageID == id
	}
	if !voted {
		return
	}
	f.log.Warn("floor: votes arrived for a message the floor never received; deciding on them", "message", id)
	f.m.Recovered.WithLabelValues("message").Inc()
	f.onMessage(context.Background(), protocol.Message{JSONRPC: protocol.JSONRPC, Method: protocol.MethodMessage,
		Params: protocol.MessageParams{ID: id, To: []string{}}})
}

// voteSummary is the votes of a grant in one line for the log:
// "ann=speak/7/selected ben=listen/2".
func voteSummary(votes []protocol.Vote) string {
	var sb strings.Builder
	for i, v := range votes {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s=%s/%g", v.From, v.State, v.Importance)
		if v.Selected {
			sb.WriteString("/selected")
		}
		if v.Closing != "" && v.Closing != protocol.ClosingNone {
			sb.WriteString("/" + string(v.Closing))
		}
	}
	return sb.String()
}

func (f *Floor) evictOldest() {
	var oldest *ballot
	for _, b := range f.pending {
		if oldest == nil || b.seq < oldest.seq {
			oldest = b
		}
	}
	if oldest != nil {
		f.finish(oldest, Decision{Reason: protocol.ReasonExpired}, protocol.DecidedEvicted)
	}
}

func (f *Floor) onState(ctx context.Context, s protocol.StateParams) {
	b, ok := f.pending[s.MessageID]
	switch {
	case !ok && f.decided.Has(s.MessageID):
		if !f.retracted(s) && !f.lateVote(s) {
			f.m.LateStates.Inc()
		}
		return
	case !ok:
		f.keepEarly(s)
		return
	case !b.participants[s.From]:
		f.m.DroppedStates.WithLabelValues("not_participant").Inc()
		return
	}
	f.m.Votes.Inc()
	b.votes[s.From] = s // the last State before the decision counts
	switch {
	case len(b.votes) == len(b.participants):
		f.decide(b, protocol.DecidedAllVoted)
	case Settled(b.votes, b.owed(), f.lastSpoke):
		f.decide(b, protocol.DecidedSettled)
	}
}

// owed lists b's participants that have not voted, sorted.
func (b *ballot) owed() []string {
	var out []string
	for p := range b.participants {
		if _, voted := b.votes[p]; !voted {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (f *Floor) onPresence(ctx context.Context, p room.PresenceEvent) {
	online := !p.Cleared && p.Presence.Online
	if online {
		if !f.present[p.ID] && len(f.present) >= MaxPresent {
			f.m.Reject(f.log, "presence", p.ID, "too_many", fmt.Errorf("more than %d companions present; %s ignored", MaxPresent, p.ID))
			return
		}
		back := !f.present[p.ID]
		f.present[p.ID] = true
		if a := f.awaiting; back && a != nil && a.g.SpeakerID() == p.ID && f.Active() {
			f.log.Info("floor: the granted speaker is back; its grant is published again", "speaker", p.ID, "message", a.g.MessageID)
			f.m.Regrants.Inc()
			f.publish(a.g)
		}
		think := min(time.Duration(p.Presence.ThinkMs)*time.Millisecond, f.cfg.VoteCeiling)
		longer := think > f.think[p.ID]
		f.think[p.ID] = think
		if longer { // it expects to think longer now: stretch the votes it owes
			for _, b := range f.pending {
				if _, voted := b.votes[p.ID]; b.participants[p.ID] && !voted {
					if at := b.arrived.Add(f.window(b)); at.After(b.deadline) {
						f.setDeadline(b, at)
					}
				}
			}
		}
		return
	}
	delete(f.think, p.ID)
	delete(f.present, p.ID)
	delete(f.holds, p.ID) // a hold ends with the body that held it
	if f.awaiting != nil && f.awaiting.g.SpeakerID() == p.ID {
		// Not published again while it is away; again as soon as it is
		// back, within RegrantFor. A stopping broker sends every Last Will,
		// and the grant it published meanwhile reached nobody (issue 27).
		f.log.Warn("floor: the granted speaker left before answering; its grant is published again if it comes back",
			"speaker", p.ID, "message", f.awaiting.g.MessageID)
	}
	// A companion that left cannot vote: stop waiting for it.
	for _, b := range f.sortedPending() {
		if b.participants[p.ID] {
			if _, voted := b.votes[p.ID]; !voted {
				delete(b.participants, p.ID)
				b.left[p.ID] = true
				if len(b.votes) == len(b.participants) {
					f.decide(b, protocol.DecidedAllVoted)
				}
			}
		}
	}
}

func (f *Floor) sortedPending() []*ballot {
	out := make([]*ballot, 0, len(f.pending))
	for _, b := range f.pending {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// lateVote takes a State for a message the room rested on without that
// voter's vote (issue 27): the voter was missing at the deadline, left
// before it voted — as every companion seems to when a stopping broker
// sends their Last Wills — or was not known to be present when the
// message came, and its vote came after all. If nothing newer
// was said and the decision is at most VoteCeiling old, the ballot opens
// again: it is decided once every owed vote is in or after a short grace,
// and a speaker it finds is granted (a rest again is not announced twice).
// A message granted to a speaker is never decided again.
func (f *Floor) lateVote(s protocol.StateParams) bool {
	b := f.rested
	if b == nil || b.msg.Params.ID != s.MessageID || !f.owes(b, s.From) || f.ended ||
		f.cfg.Clock.Now().Sub(b.restedAt) > f.cfg.VoteCeiling {
		return false
	}
	f.rested = nil
	// Every member may vote now, not only those the floor knew were there:
	// after a restart the votes come in a burst, before the presence, and
	// the first of them must not decide alone. The ballot closes when the
	// whole roster has voted, or a State's way (thinkMargin) after this one.
	clear(b.left)
	for m := range f.cfg.Room.Members {
		if m != b.msg.Params.From {
			b.participants[m] = true
		}
	}
	f.pending[s.MessageID] = b
	f.log.Info("floor: a vote came after the room rested on a message; deciding it again",
		"message", s.MessageID, "voter", s.From, "rested", f.cfg.Clock.Now().Sub(b.restedAt).Round(time.Millisecond))
	f.m.Recovered.WithLabelValues("late_vote").Inc()
	f.setDeadline(b, f.cfg.Clock.Now().Add(thinkMargin))
	f.onState(context.Background(), s)
	return true
}

func (f *Floor) decide(b *ballot, by string) {
	if len(f.holds) > 0 {
		f.finish(b, Decision{Reason: protocol.ReasonHeld}, by)
		return
	}
	f.finish(b, Decide(b.votes, f.lastSpoke), by)
}

func (f *Floor) finish(b *ballot, d Decision, by string) {
	id := b.msg.Params.ID
	if b.timer != nil {
		b.timer.Stop()
	}
	delete(f.pending, id)
	f.decided.Add(id)
	g := protocol.TurnGrant{From: f.cfg.ID, MessageID: id, Reason: d.Reason, DecidedBy: by, Votes: []protocol.Vote{}}
	if d.Speaker != "" {
		s := d.Speaker
		g.Speaker = &s
	}
	voters := make([]string, 0, len(b.votes))
	for v := range b.votes {
		voters = append(voters, v)
	}
	sort.Strings(voters)
	for _, v := range voters {
		g.Votes = append(g.Votes, protocol.VoteOf(b.votes[v]))
	}
	for p := range b.participants {
		if _, ok := b.votes[p]; !ok {
			g.Missing = append(g.Missing, p)
		}
	}
	sort.Strings(g.Missing)
	again := !b.restedAt.IsZero()
	if f.log.Enabled(context.Background(), slog.LevelDebug) { // every message passes here: no summary unless it is logged
		f.log.Debug("floor: decided", "message", id, "speaker", d.Speaker, "reason", d.Reason, "closed_by", by,
			"votes", voteSummary(g.Votes), "missing", g.Missing, "left", sortedKeys(b.left),
			"after", f.cfg.Clock.Now().Sub(b.arrived).Round(time.Millisecond), "again", again, "active", f.Active())
	}
	if d.Speaker == "" && d.Reason == protocol.ReasonRest && (by == protocol.DecidedDeadline || by == protocol.DecidedAllVoted) &&
		!f.ended && b.seq == f.seq {
		if b.restedAt.IsZero() {
			b.restedAt = f.cfg.Clock.Now()
		}
		f.rested = b // a vote owed may still come (lateVote)
	}
	if again && d.Speaker == "" {
		return // decided again for nobody: the rest was announced already
	}
	if len(g.Votes) == 0 && len(g.Missing) > 0 && by == protocol.DecidedDeadline {
		announced := time.Duration(0)
		for _, p := range g.Missing {
			announced = max(announced, f.think[p])
		}
		f.log.Warn("floor: no vote arrived before the deadline; the room rests",
			"message", id, "missing", g.Missing, "waited", b.deadline.Sub(b.arrived).Round(time.Millisecond),
			"slowest_announced_think", announced, "vote_ceiling", f.cfg.VoteCeiling,
			"likely", "the companions' brains answer slower than they announce or than room.vote_ceiling allows (a slow or overloaded model), or their States are lost")
	}
	if b.seq >= f.last.seq {
		f.last = lastGrant{g: g, seq: b.seq}
	}
	if !f.Active() {
		if !f.done.Has(id) {
			f.unannounced = append(f.unannounced, g)
			if len(f.unannounced) > maxUnannounced {
				f.unannounced = f.unannounced[1:]
			}
		}
		return
	}
	f.m.TurnLatency.Observe(f.cfg.Clock.Now().Sub(b.arrived).Seconds())
	f.m.Grants.WithLabelValues(d.Reason).Inc()
	f.publish(g)
	if b.seq == f.seq {
		f.await(g)
		if f.awaiting != nil {
			f.awaiting.ballot = b
		}
	}
}
