// What a grant does: acted on once (at least once delivery), and the turn
// it starts.

package companion

import (
	"context"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// answer is what the companion said for a grant: nil Message while it is
// still speaking, or when it gave the turn up.
type answer struct {
	msg  *protocol.Message
	done bool
}

// votedIn reports whether g counts a vote from id.
func votedIn(g protocol.TurnGrant, id string) bool {
	for _, v := range g.Votes {
		if v.From == id {
			return true
		}
	}
	return false
}

func (c *Companion) ignore(reason string, g protocol.TurnGrant) {
	c.m.IgnoredGrants.WithLabelValues(reason).Inc()
	c.log.Debug("grant ignored", "reason", reason, "message", g.MessageID)
}

func (c *Companion) onGrant(ctx context.Context, g protocol.TurnGrant) {
	if c.voted != nil && c.voted.state.Params.MessageID == g.MessageID && (g.SpeakerID() != "" || votedIn(g, c.me())) {
		// The floor decided with our State, or for a speaker: it arrived or
		// no longer matters. A rest without our vote keeps it coming: the
		// floor decides a rested message again on a vote it lacked (issue 27:
		// after a broker restart the floor rests on a message whose votes
		// are still on their way).
		c.stopResend()
	}
	if g.SpeakerID() == "" && g.DecidedBy == protocol.DecidedDeadline && len(g.Missing) > 0 {
		c.sayAgainUnheard(g)
	}
	if g.SpeakerID() != c.me() {
		if g.SpeakerID() != "" {
			c.stopThinking(g.MessageID) // another speaks: this draft is not needed
		}
		return
	}
	if a, ok := c.answered[g.MessageID]; ok {
		// The floor repeats a grant until it hears the answer: say it again
		// (the same Message, which every receiver handles once), never
		// speak it again (issue 9, defect 1).
		switch {
		case a.msg != nil:
			c.m.Resent.WithLabelValues("answer").Inc()
			if err := c.cfg.Room.QueueMessage(c.out, *a.msg); err != nil {
				c.log.Warn("answer not sent again", "message", g.MessageID, "err", err)
			}
			c.ignore("already_answered", g)
		case !a.done:
			c.ignore("speaking", g)
		default:
			c.ignore("gave_up", g)
		}
		return
	}
	tf, ok := c.thoughts[g.MessageID]
	switch {
	case !ok:
		// Restarted since it voted (or its vote was another process's):
		// it has nothing to say. Its listen takes the vote back, and the
		// floor decides again without it rather than granting it again
		// for a minute.
		c.log.Warn("granted a turn for a message it did not vote on; it votes listen", "message", g.MessageID)
		c.ignore("not_voted", g)
		c.remember(g.MessageID)
		c.answered[g.MessageID].done = true // given up: a repeated grant is not voted on again
		c.listen(ctx, g.MessageID)
		return
	case tf.seq <= c.spoke:
		c.log.Info("granted a turn older than the one it last took; ignored", "message", g.MessageID)
		c.ignore("stale", g)
		return
	case tf.order < c.lastUser:
		c.log.Info("granted a turn for a message older than a user's newer one; void", "message", g.MessageID)
		c.ignore("void", g)
		return
	case tf.thought.Closing == protocol.ClosingTerminal:
		c.log.Info("granted the floor at terminal: the conversation is over for this companion")
		c.ignore("terminal", g)
		return
	case c.cfg.Muted():
		c.ignore("muted", g)
		return
	case c.turn != nil:
		c.log.Warn("granted while still speaking; skipped", "message", g.MessageID)
		c.ignore("speaking", g)
		return
	}
	c.spoke = tf.seq
	c.remember(g.MessageID)
	c.turn = &turn{host: c, cfg: &c.cfg, log: c.log, wg: &c.wg, noHold: c.noHold, grant: g.MessageID, msgID: protocol.NewID()}
	c.turn.begin(ctx, tf)
}

// turnFor is the turn granted for message grant, nil when it is over or
// was given up (a barge-in): its late events change nothing.
func (c *Companion) turnFor(grant string) *turn {
	if t := c.turn; t != nil && t.grant == grant {
		return t
	}
	return nil
}

// publish says a turn's words m to the room, the answer to grant that a
// repeated grant publishes again (host).
func (c *Companion) publish(grant string, m protocol.Message) {
	if err := c.cfg.Room.QueueMessage(c.out, m); err != nil {
		c.log.Error("message not published", "err", err)
	}
	if a := c.answered[grant]; a != nil {
		a.msg = &m
	}
}

// ended hears that turn t is over, with what it said (host).
func (c *Companion) ended(t *turn, said *protocol.Message) {
	if c.turn == t {
		c.turn = nil
	}
	c.noHold = t.noHold
	c.replied(t.grant, said)
	if a := c.answered[t.grant]; a != nil {
		a.msg, a.done = said, true
	}
	c.status(Listening)
}

// remember records that the grant for id was acted on (bounded).
func (c *Companion) remember(id string) {
	c.answered[id] = &answer{}
	c.answers = append(c.answers, id)
	if len(c.answers) > maxAnswers {
		delete(c.answered, c.answers[0])
		c.answers = c.answers[1:]
	}
}
