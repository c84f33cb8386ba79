package companion

import (
	"context"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A person speaking (docs/hearing.md). Each robot's ear says when it
// starts transcribing a person's utterance (a heard report of state
// open) and when that utterance ends (its transcript, or a report of
// state dropped). While any is open, a granted turn does not start: the
// robot never begins over a person; after a transcript, not until the
// person's Message has had time to come (it gives the turn up). Words that began over a person
// already speaking — the open report came late, or the grant won the
// race — stop at once (the turn yields); the person's sentence is heard
// to its end (device/ear's gate lets it through) and becomes a Message
// the room answers.

const (
	// personHold bounds how long an open utterance holds the turns whose
	// end never comes (its drop lost): the longest utterance the VAD
	// makes (15 s) and the transcript's time after it.
	personHold = 20 * time.Second
	// personSlack is the hearing's slack for clocks and detectors: words
	// that began up to it before the person's utterance still yield.
	personSlack = 300 * time.Millisecond
	// messageHold is how long a transcript still holds the turn: the
	// person's Message follows it within the hearing's window (150 ms by
	// default) and the broker's time, and a turn not yet started then is
	// given up for it (a barge-in) rather than begun just before it.
	messageHold = time.Second
	// maxPeople bounds the utterances followed at once, maxEnded the ended
	// ones remembered (an open report copied after its end opens nothing).
	maxPeople = 64
	maxEnded  = 1024
)

// personUtterance is a person's utterance a companion follows.
type personUtterance struct {
	until       time.Time // it holds a turn until then
	transcribed bool      // its transcript came: only its Message is awaited
}

// onHeard follows a heard report's utterance: opened, or ended.
func (c *Companion) onHeard(ctx context.Context, h protocol.Heard) {
	if h.Utterance == "" || h.Wake || h.State == protocol.HeardPartial {
		return // an older sender's, a wake word: no utterance to follow; a caption: nothing to do
	}
	if h.State != protocol.HeardOpen {
		c.onEagerHeard(ctx, h)
		if h.State == protocol.HeardTentative || h.State == protocol.HeardResumed {
			return // the utterance is still under way
		}
	}
	now := c.cfg.Clock.Now()
	for u, p := range c.persons {
		if !p.until.After(now) {
			delete(c.persons, u)
		}
	}
	if h.State != protocol.HeardOpen {
		delete(c.persons, h.Utterance)
		if h.State == "" && !c.spoken.Has(h.Utterance) && len(c.persons) < maxPeople { // its Message is on its way
			c.persons[h.Utterance] = personUtterance{until: now.Add(messageHold), transcribed: true}
		}
		c.spoken.Add(h.Utterance) // an open report copied after its end opens nothing
		c.maybeStart(ctx)
		return
	}
	if c.spoken.Has(h.Utterance) {
		return
	}
	if _, ok := c.persons[h.Utterance]; ok {
		return // a copy: the bound runs from the first
	}
	if age := now.Sub(h.Start); age > personHold || age < -personHold {
		// An utterance that began long ago (or far ahead, by a clock gone
		// wrong) is no one speaking now: a report delayed or forged.
		c.log.Warn("a heard report says a person began speaking too long ago; it holds nothing", "heard_by", h.From, "start", h.Start, "age", age.Round(time.Millisecond))
		return
	}
	if len(c.persons) >= maxPeople {
		return
	}
	c.persons[h.Utterance] = personUtterance{until: now.Add(personHold)}
	switch t := c.turn; {
	case t == nil:
	case t.started && h.Start.Before(t.startedAt.Add(personSlack)):
		if sure := h.Start.Add(personSure); now.Before(sure) {
			// Told at its first sound: it may be this robot's own voice, or
			// another's, heard before its speaking status closed the ear.
			// It yields if the utterance is still under way then.
			utt, grant := h.Utterance, t.grant
			c.cfg.Clock.AfterFunc(sure.Sub(now), func() { c.push(event{kind: evPersonSure, id: grant, heard: protocol.Heard{Utterance: utt}}, "person") })
			break
		}
		c.yieldTo(h.From, t)
	case !t.started:
		c.log.Info("a person is speaking; the granted words wait until they stop", "heard_by", h.From, "message", t.grant, "at_most", personHold)
	}
	c.maybeStart(ctx)
}

// personSure: an utterance whose first sound overlaps the start of a
// robot's words yields them if it is still under way min_utterance and a
// little after its first sound: by then a robot's voice has closed the
// ear that heard it (its speaking status came) and the utterance was
// dropped, while a person's goes on.
const personSure = 400 * time.Millisecond

// surePerson yields turn grant's words to utterance utt if it is still a
// person speaking.
func (c *Companion) surePerson(grant, utt string) {
	t := c.turn
	if p, ok := c.persons[utt]; !ok || p.transcribed || t == nil || t.grant != grant || !t.started {
		return
	}
	c.yieldTo("", t)
}

func (c *Companion) yieldTo(heardBy string, t *turn) {
	c.log.Info("a person was already speaking when this companion began; it yields", "heard_by", heardBy, "message", t.grant)
	t.yield()
}

// heardMessage ends the wait for the person's Message: it came.
func (c *Companion) heardMessage() {
	for u, p := range c.persons {
		if p.transcribed {
			delete(c.persons, u)
		}
	}
}

// personSpeaking is until when a person's open utterance holds a turn
// (zero: nobody is speaking); a turn looks again when it ends.
func (c *Companion) personSpeaking(now time.Time) time.Time {
	var until time.Time
	for _, p := range c.persons {
		if p.until.After(now) {
			until = later(until, p.until)
		}
	}
	return until
}
