// Words the room did not hear, said again.

package companion

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// unheard is this companion's newest words that the floor rested on by
// its deadline while votes were owed: said once more then, and again as
// each robot that owed a vote comes back online (sayAgainUnheard).
type unheard struct {
	msg     protocol.Message
	missing map[string]bool // who owed a vote and has not been told again since it came back
	at      time.Time       // when the room rested on them
}

// unheardFor bounds how long words the room did not hear are said again
// for robots coming back: the floor decides a rested message again on
// late votes within its vote ceiling (30 s by default).
const unheardFor = 30 * time.Second

// sayAgainUnheard says once more a Message of this companion's that the
// floor rested on by its deadline while votes were owed (g.Missing): at
// QoS 0 a robot reconnecting after a broker node's loss never heard it,
// so it voted on nothing, and the conversation would end there. The same
// Message again (its id unchanged: who heard it handles it once) reaches
// who missed it; they vote, and the floor decides it again on the late
// votes (floor.lateVote). A robot still reconnecting misses this copy
// too: it is said once more when that robot's presence comes back
// (backOnline). The first such rest of a Message only.
func (c *Companion) sayAgainUnheard(g protocol.TurnGrant) {
	if c.unheard != nil && c.unheard.msg.Params.ID == g.MessageID {
		return
	}
	for _, id := range c.answers {
		a := c.answered[id]
		if a == nil || a.msg == nil || a.msg.Params.ID != g.MessageID {
			continue
		}
		u := &unheard{msg: *a.msg, missing: map[string]bool{}, at: c.cfg.Clock.Now()}
		for _, m := range g.Missing {
			if len(u.missing) < maxPresent {
				u.missing[m] = true
			}
		}
		c.unheard = u
		c.log.Info("the room rested on this companion's words without every vote; saying them once more for who did not hear them",
			"message", g.MessageID, "missing", g.Missing)
		c.sayUnheard("rest")
		return
	}
}

// backOnline says the unheard words again for a robot that owed its vote
// on them and is back (its presence online again), once per robot, while
// the floor may still decide them again.
func (c *Companion) backOnline(id string) {
	u := c.unheard
	if u == nil || !u.missing[id] {
		return
	}
	delete(u.missing, id)
	if c.cfg.Clock.Now().Sub(u.at) > unheardFor {
		c.unheard = nil
		return
	}
	c.log.Info("a robot that did not hear this companion's words is back; saying them once more", "message", u.msg.Params.ID, "robot", id)
	c.sayUnheard("back")
}

func (c *Companion) sayUnheard(why string) {
	c.m.Resent.WithLabelValues("unheard").Inc()
	if err := c.cfg.Room.QueueMessage(c.out, c.unheard.msg); err != nil {
		c.log.Warn("words not said again", "message", c.unheard.msg.Params.ID, "why", why, "err", err)
	}
}
