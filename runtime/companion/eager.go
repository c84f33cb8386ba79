package companion

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Eager end of turn (docs/hearing.md). A robot's ear that hears a person
// pause tells the room their words so far (a heard report of state
// tentative). The companion thinks on them at once — its brain writes the
// vote and the draft while the person's pause runs on and the recogniser
// finishes — but nothing leaves: no State, no words. When the person's
// Message comes and says the same words (endofturn.SameWords: whatever
// their case, punctuation and fillers), the think is the Message's: its vote
// leaves at once, or as soon as it is written. When the person goes on
// (a report of state resumed), the utterance is dropped, other words come
// first or the Message says something else, the think is cancelled at
// once (its model request closed) and the Message, if any, thought on
// anew; so is a think whose Message has not come a second after the
// utterance's transcript. One robot's words are followed per sentence:
// the first robot whose ear tells them, until its utterance ends or words
// that begin after them come (a report whose end was lost holds nothing).

// eagerFor bounds how long a think on words so far waits for their
// Message: the recogniser's timeout and more.
const eagerFor = 30 * time.Second

// eagerThink is a think on a person's words so far.
type eagerThink struct {
	from, utt string    // the robot whose ear told the words, and its utterance
	id        string    // the think's id: its events carry it
	words     string    // the words, as told
	end       time.Time // where the speech stopped when they were told
	held      []event
	recalled  bool // thought with what the memory holds of the hearing user
}

// adoption is an eager think that became a Message's: its events are
// renamed to the Message's as they come.
type adoption struct {
	msg     protocol.Message
	arrived time.Time
	order   uint64
}

// onEagerHeard follows the words so far a robot's ear tells, and their
// withdrawal.
func (c *Companion) onEagerHeard(ctx context.Context, h protocol.Heard) {
	ex := c.eager
	ours := ex != nil && ex.from == h.From && ex.utt == h.Utterance
	switch h.State {
	case protocol.HeardTentative:
		if c.cfg.NoEager {
			return
		}
		if ex != nil && !ours && !h.Start.After(ex.end.Add(personSlack)) {
			return // another robot's words of this sentence are followed
		}
		if c.spoken.Has(h.Utterance) {
			return // a copy after the utterance ended (at-least-once delivery)
		}
		if ours && endofturn.SameWords(ex.words, h.Text) {
			return
		}
		c.voidEager(ctx, "newer words, or a later sentence")
		c.startEager(ctx, h)
	case protocol.HeardResumed:
		if ours {
			c.voidEager(ctx, "the person went on")
		}
	case protocol.HeardDropped:
		if ours {
			c.voidEager(ctx, "the utterance was dropped")
		}
	case "": // its transcript: the Message follows within the hearing's window, or never
		if ours {
			id := ex.id
			c.cfg.Clock.AfterFunc(messageHold, func() { c.push(event{kind: evEagerDue, id: id}, "eager") })
		}
	}
}

// startEager thinks on the words h tells, as on the person's Message.
func (c *Companion) startEager(ctx context.Context, h protocol.Heard) {
	c.eagerN++
	id := fmt.Sprintf("eager-%d-%s", c.eagerN, h.Utterance)
	if len(id) > protocol.MaxIDLen {
		id = id[:protocol.MaxIDLen]
	}
	m := protocol.NewMessage(id, c.cfg.HeardAs, nil, h.Text, "")
	m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
	switch {
	case c.cfg.Muted() || c.thinking >= maxThinking:
		return
	case c.mem != nil && memory.Control(h.Text) != memory.None:
		return // a memory command: the rules answer its Message
	}
	in := c.input(m, c.history)
	// A person's words start the conversation again (follow): at its first
	// turn, and nobody asked to close it.
	in.Turn, in.ClosingInstruction = 0, ""
	var people []string
	recalled := false
	if c.mem != nil && !c.identifies {
		people = c.people(m)
		in.Remembered = c.mem.Recall(m.Params.From, m.Params.Message, people)
		recalled = len(in.Remembered) > 0 || c.mem.Knows(m.Params.From)
	}
	in.Tools = c.toolsFor(m)
	c.eager = &eagerThink{from: h.From, utt: h.Utterance, id: id, words: h.Text, end: h.End, recalled: recalled}
	c.eagerIDs.Add(id)
	c.m.Eager.WithLabelValues("started").Inc()
	c.startThinking(ctx, event{kind: evThought, id: id, in: in, arrived: c.cfg.Clock.Now()}, people)
	c.cfg.Clock.AfterFunc(eagerFor, func() { c.push(event{kind: evEagerDue, id: id}, "eager") })
}

// voidEager cancels the think on words so far, if any: nobody needs it.
func (c *Companion) voidEager(ctx context.Context, why string) {
	ex := c.eager
	if ex == nil {
		return
	}
	c.eager = nil
	c.stopThinking(ex.id)
	for _, e := range ex.held {
		if e.kind == evThought {
			c.thoughtDone(e.id)
		}
	}
	c.m.Eager.WithLabelValues("withdrawn").Inc()
	c.log.Debug("eager end of turn: the think on the words so far is cancelled", "words", ex.words, "why", why)
}

// takeEager is the think on words so far that Message m adopts (nil: none;
// any other is void: the conversation moved on).
func (c *Companion) takeEager(ctx context.Context, m protocol.Message) (*eagerThink, context.CancelFunc) {
	if _, ok := m.Params.Metadata[protocol.MetaVoice]; ok {
		c.identifies = true
	}
	ex := c.eager
	if ex == nil {
		return nil, nil
	}
	if !c.adoptable(m, ex) || !endofturn.SameWords(ex.words, m.Params.Message) ||
		(c.mem != nil && memory.Control(m.Params.Message) != memory.None) || enrolled(m) {
		if m.Params.From == c.cfg.HeardAs {
			c.m.Eager.WithLabelValues("differed").Inc()
		}
		c.voidEager(ctx, "the Message says other words")
		return nil, nil
	}
	c.eager = nil
	cancel := c.thinks[ex.id]
	delete(c.thinks, ex.id) // the Message's now: follow must not stop it
	return ex, cancel
}

// adoptable reports whether think ex on words so far (thought as the
// hearing user) may be m's. Where the robots identify no voices, the
// hearing user's Message adopts it. Where they do, a think that used the
// hearing user's facts is never another voice's (nor an unknown one's:
// they are nobody's); one that used none is adopted by the hearing user,
// an unsure voice, or a person of whom the robot remembers nothing — a
// person it remembers is thought for again, with their facts
// (docs/hearing.md).
func (c *Companion) adoptable(m protocol.Message, ex *eagerThink) bool {
	_, identified := m.Params.Metadata[protocol.MetaVoice]
	switch {
	case !identified:
		return m.Params.From == c.cfg.HeardAs
	case ex.recalled:
		return false
	case m.Params.From == c.cfg.HeardAs || !personal(m) || c.mem == nil:
		return true
	}
	return !c.mem.Knows(m.Params.From)
}

func enrolled(m protocol.Message) bool { _, ok := enrolment(m); return ok }

// adopt makes ex the think on m: its cancel is m's, its vote and thought
// are m's, those that came already at once.
func (c *Companion) adopt(ctx context.Context, ex *eagerThink, m protocol.Message, e event, cancel context.CancelFunc) {
	c.m.Eager.WithLabelValues("adopted").Inc()
	if cancel != nil {
		c.thinks[m.Params.ID] = cancel
	}
	if len(c.adopted) >= maxThinking*2 {
		clear(c.adopted)
	}
	c.adopted[ex.id] = adoption{msg: m, arrived: e.arrived, order: e.order}
	for _, he := range ex.held {
		c.handle(ctx, he)
	}
}

// eagerEvent says whether vote or thought event e goes on to be voted
// (renamed to the Message that adopted its think), or stays with the
// think on words so far (held until their Message) or is dropped (void).
func (c *Companion) eagerEvent(e *event) bool {
	if a, ok := c.adopted[e.id]; ok {
		if e.kind == evThought {
			delete(c.adopted, e.id) // the think is over
		}
		e.id, e.arrived, e.order = a.msg.Params.ID, a.arrived, a.order
		e.in.Message = a.msg
		if from := a.msg.Params.From; e.kind == evThought && from != c.cfg.HeardAs { // thought as the hearing user: said to who spoke
			for i, to := range e.thought.To {
				if to == c.cfg.HeardAs {
					e.thought.To[i] = from
				}
			}
		}
		return true
	}
	if !c.eagerIDs.Has(e.id) {
		return true // a Message's
	}
	if ex := c.eager; ex != nil && ex.id == e.id {
		ex.held = append(ex.held, *e)
		return false
	}
	if e.kind == evThought {
		c.thoughtDone(e.id)
	}
	return false
}

// thoughtDone ends a think nobody votes on.
func (c *Companion) thoughtDone(id string) {
	c.thinking--
	delete(c.thinks, id)
	if c.turn == nil && c.thinking == 0 {
		c.status(Listening)
	}
}
