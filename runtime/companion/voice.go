package companion

import (
	"context"
	"errors"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Speaking status and overlapped turns (docs/turns.md).
//
// Every companion follows the room's speaking statuses. In overlapped
// mode a granted companion prepares at once — the words, and a "speak"
// query with a hold token that makes its device synthesize the first
// sentence and wait — and starts only when the audio of everyone else
// (the previous speaker above all) has ended plus the pause: then it
// sends "speak.start", announces its speaking status and publishes its
// Message marked as being spoken, so the others vote while they hear it.
// A status whose end never comes holds nobody up longer than its
// announced duration plus VoiceMargin; a status that never comes for a
// Message marked as being spoken, longer than StatusGrace.
//
// A body that does not know the hold (Config.NoHold: aikyo's clients
// behind the bridge) would play a held speak at once, over the voice
// before it; it is handed its words only at the start, when the floor is
// free, and its voice lasts the speech estimate when its result gives no
// length. A body seen playing a held speak at once is treated so from
// then on.
//
// In sequential mode (aikyo's order) the device speaks after the pause
// that follows the grant, and the Message goes out once the audio ends.
// Both modes announce the speaking status, and both stop the words at a
// user's barge-in.

// The barge-in modes (protocol.BargeIn), VoiceMargin and the speech
// estimate are the room's contract, in runtime/protocol.

const (
	// StatusGrace is how long a Message marked as being spoken waits for
	// its speaking status before the room stops waiting for it.
	StatusGrace = 2 * time.Second
	// holdFor bounds how long a prepared speak waits for its start.
	holdFor = time.Minute
)

// voice is what a companion knows of one member's audio, in its own clock
// (remote clocks are never compared).
type voice struct {
	msgID    string
	speaking bool
	until    time.Time // while speaking: when the room stops waiting for the end
	ended    time.Time // when the end was heard; zero while speaking
}

// turn is the granted turn being prepared or spoken.
type turn struct {
	grant     string // the message answered
	msgID     string // the Message these words are
	token     string // the device's hold token
	after     time.Time
	fromVoice string // the answered message's author, when its words were being spoken
	u         *brain.Utterance
	whole     bool // u is the whole utterance, not its first sentences
	stopping  bool // a user barged in: words not yet published never are
	started   bool
	startedAt time.Time
	estimate  time.Duration
	said      *protocol.Message // published at the start (overlapped)
	ctx       context.Context   // ends with the turn
	cancel    context.CancelFunc
	timer     clock.Timer
}

var errNoWords = errors.New("the brain gave no words")

func (c *Companion) onSpeaking(ctx context.Context, e room.SpeakingEvent) {
	now := c.cfg.Clock.Now()
	switch {
	case e.Cleared:
		delete(c.voices, e.ID)
	case e.Speaking.Speaking:
		if v, ok := c.voices[e.ID]; ok && v.msgID == e.Speaking.MessageID && !v.speaking {
			return // the start overtaken by its end, or a copy
		}
		d := time.Duration(e.Speaking.DurationMs) * time.Millisecond
		c.voices[e.ID] = voice{msgID: e.Speaking.MessageID, speaking: true, until: now.Add(d + protocol.VoiceMargin)}
	default:
		if v, ok := c.voices[e.ID]; ok && v.msgID == e.Speaking.MessageID && !v.speaking {
			return // a copy of the end
		}
		c.voices[e.ID] = voice{msgID: e.Speaking.MessageID, ended: now}
	}
	c.maybeStart(ctx)
}

// prepare readies the granted turn: the words, and the device's held speak.
func (c *Companion) prepare(ctx context.Context, id string, tf thoughtFor) {
	tctx, cancel := context.WithCancel(ctx)
	t := &turn{grant: id, msgID: protocol.NewID(), token: protocol.NewID()[:16], after: tf.arrived, ctx: tctx, cancel: cancel}
	m := tf.in.Message
	if sp, _ := m.Params.Metadata[protocol.MetaSpeaking].(bool); sp && c.cfg.Room.IsMember(m.Params.From) {
		t.fromVoice = m.Params.From
	}
	c.turn = t
	c.status(Speaking)
	held := c.cfg.Device != "" && !c.noHold // the device prepares its speak now
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if tf.words != nil && held { // prepared on its first sentence
			res, err := c.speakWords(tctx, tf.words, t.msgID, t.token, c.cfg.SpeakTimeout+holdFor,
				func(u brain.Utterance, whole bool) {
					c.deliver(ctx, event{kind: evPrepared, id: id, utter: u, whole: whole})
				},
				func(u brain.Utterance) { c.deliver(ctx, event{kind: evDrafted, id: id, utter: u}) })
			c.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
			return
		}
		u, err := c.utterance(tctx, id, tf)
		if err != nil {
			c.deliver(ctx, event{kind: evSpoke, id: id, err: err})
			return
		}
		c.deliver(ctx, event{kind: evPrepared, id: id, utter: u, whole: true})
		if !held {
			return // text only, or a body without the hold: the start speaks
		}
		req := protocol.SpeakRequest{Message: u.Text, Emotion: u.Emotion, Hold: t.token, MessageID: t.msgID}
		res, err := c.speakQuery(tctx, req, c.cfg.SpeakTimeout+holdFor)
		c.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
	}()
}

// utterance is the turn's words: the draft, or a second brain call.
func (c *Companion) utterance(ctx context.Context, id string, tf thoughtFor) (brain.Utterance, error) {
	u := brain.Utterance{Text: tf.thought.Draft, Emotion: tf.thought.Emotion, To: tf.thought.To, Actions: tf.thought.Actions, Cut: tf.thought.Cut}
	if tf.words != nil { // the draft as its model writes it: wait for the whole
		var err error
		if u, err = tf.words.whole(ctx); err == nil && u.Text == "" {
			err = errNoWords
		}
		if err != nil {
			c.log.Info("no words; the turn is given up", "message", id, "err", err)
			return u, err
		}
	} else if (c.cfg.TwoCall && !tf.ruled) || u.Text == "" {
		uctx, cancel := context.WithTimeout(ctx, c.cfg.ThinkTimeout)
		var err error
		in := tf.in
		in.Instruction = tf.thought.Instruction // the instruction the events chose, in the State's call
		u, err = c.cfg.Brain.Utter(uctx, in)
		cancel()
		if err == nil && u.Text == "" {
			err = errNoWords
		}
		if err != nil {
			c.cfg.Room.Metrics.BrainFailures.WithLabelValues("utterance").Inc()
			c.log.Error("no utterance; the turn is given up", "message", id, "err", err)
			return u, err
		}
	}
	return withEmotion(u), nil
}

func (c *Companion) onPrepared(ctx context.Context, id string, u brain.Utterance, whole bool) {
	t := c.turn
	if t == nil || t.grant != id {
		return // given up meanwhile (a barge-in)
	}
	t.u, t.whole = &u, whole
	c.maybeStart(ctx)
}

// onDrafted completes the turn's words when the draft being spoken is
// whole: what goes with them is asked for, the speaking status gets the
// whole length, and (overlapped) the Message goes out, marked as being
// spoken. Before the start, the start does all that.
func (c *Companion) onDrafted(ctx context.Context, id string, u brain.Utterance) {
	t := c.turn
	if t == nil || t.grant != id || t.whole {
		return // given up, or whole already when it was prepared
	}
	t.u, t.whole = &u, true
	if !t.started {
		return
	}
	if c.cfg.Device != "" {
		c.act(ctx, t.msgID, u.Actions)
		now := c.cfg.Clock.Now()
		whole := protocol.SpeechEstimate(u.Text, c.cfg.Card.Language)
		left := max(whole-now.Sub(t.startedAt), 0) // statuses are timed from when they are heard
		t.estimate = whole
		c.announceVoice(t.msgID, true, t.startedAt, left)
	}
	if c.cfg.Overlap && !t.stopping {
		c.publishSpoken(t)
	}
}

// publishSpoken publishes the started turn's Message, marked as being
// spoken (overlapped turns).
func (c *Companion) publishSpoken(t *turn) {
	m := c.message(t.msgID, *t.u)
	m.Params.Metadata[protocol.MetaSpeaking] = true
	c.say(m)
	if a := c.answered[t.grant]; a != nil {
		a.msg = &m // a repeated grant publishes it again
	}
	t.said = &m
}

// maybeStart starts the prepared turn once nobody else is speaking and the
// pause after the last voice has passed; otherwise it looks again at the
// next bound (and at every speaking status and presence change).
func (c *Companion) maybeStart(ctx context.Context) {
	t := c.turn
	if t == nil || t.started || t.u == nil {
		return
	}
	now := c.cfg.Clock.Now()
	at := c.startTime(t, now)
	if at.After(now) {
		if t.timer != nil {
			t.timer.Stop()
		}
		id := t.grant
		t.timer = c.cfg.Clock.AfterFunc(at.Sub(now), func() { c.deliver(ctx, event{kind: evStartCheck, id: id}) })
		return
	}
	c.start(ctx, t, now)
}

// startTime is when t may start: the pause after the latest end of any
// voice (or after the answered message, if no voice came since), later
// while someone is still speaking — at most until that voice's bound.
func (c *Companion) startTime(t *turn, now time.Time) time.Time {
	last := t.after
	var busy time.Time
	for id, v := range c.voices {
		switch {
		case v.speaking && now.Before(v.until) && (c.present[id] || id == c.me()):
			busy = later(busy, v.until)
		case v.speaking:
			last = later(last, v.until) // its end never came: the bound stands for it
		default:
			last = later(last, v.ended)
		}
	}
	if t.fromVoice != "" && c.present[t.fromVoice] {
		if v, ok := c.voices[t.fromVoice]; !ok || v.msgID != t.grant {
			// Its words are being spoken, but their status has not come yet.
			if bound := t.after.Add(StatusGrace); now.Before(bound) {
				busy = later(busy, bound)
			}
		}
	}
	if !busy.IsZero() {
		return busy // looked at again when a status changes, at this bound at the latest
	}
	return last.Add(c.cfg.Pause)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// start plays the prepared turn and publishes its Message, marked as
// being spoken.
func (c *Companion) start(ctx context.Context, t *turn, now time.Time) {
	t.started, t.startedAt = true, now
	if t.timer != nil {
		t.timer.Stop()
	}
	m := c.message(t.msgID, *t.u)
	if c.cfg.Device == "" {
		c.say(m)
		c.finish(t.grant, &m)
		return
	}
	token, id := t.token, t.grant
	req := protocol.SpeakRequest{Message: t.u.Text, Emotion: t.u.Emotion, MessageID: t.msgID}
	tctx, noHold := t.ctx, c.noHold
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if noHold { // its words now that the floor is free
			res, err := c.speakQuery(tctx, req, c.cfg.SpeakTimeout)
			c.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
			return
		}
		if _, err := query.SpeakStart(ctx, c.cfg.Queries, c.cfg.Device, token, 5*time.Second); err != nil {
			c.log.Warn("speak.start failed; the held speak times out", "body", c.cfg.Device, "err", err)
		}
	}()
	t.estimate = protocol.SpeechEstimate(t.u.Text, c.cfg.Card.Language)
	c.announceVoice(t.msgID, true, now, t.estimate)
	if t.whole { // else when the draft is complete (onDrafted)
		c.act(ctx, t.msgID, t.u.Actions)
		c.publishSpoken(t)
	}
}

// onSpoke ends the turn when the device's speak result (or failure) is in.
func (c *Companion) onSpoke(ctx context.Context, e event) {
	t := c.turn
	if t == nil || t.grant != e.id {
		return // a turn given up; its speak ended too
	}
	switch {
	case t.started && c.cfg.Overlap:
		started, d := e.result.StartedAt, time.Duration(e.result.DurationMs)*time.Millisecond
		if started.IsZero() {
			started = t.startedAt
		}
		if c.noHold && e.err == nil && d == 0 && e.result.StartedAt.IsZero() {
			// No length: the body may still be playing; its voice lasts
			// the estimate, and the room hears its end then.
			d = t.estimate
			if rest := t.startedAt.Add(d).Sub(c.cfg.Clock.Now()); rest > 0 {
				res := protocol.SpeakResult{StartedAt: started, DurationMs: d.Milliseconds()}
				if t.timer != nil {
					t.timer.Stop()
				}
				t.timer = c.cfg.Clock.AfterFunc(rest, func() { c.deliver(ctx, event{kind: evSpoke, id: e.id, result: res}) })
				return
			}
		}
		c.announceVoice(t.msgID, false, started, d)
		if e.err != nil {
			c.log.Error("speak failed after it started", "body", c.cfg.Device, "err", e.err)
		}
		c.finish(t.grant, t.said)
	case c.cfg.Overlap:
		if t.u == nil {
			c.finish(t.grant, nil) // no words at all: the turn is given up
			return
		}
		m := c.message(t.msgID, *t.u)
		if e.err != nil {
			// Failed before it started (no TTS, no audio): the words go to
			// the room at once, marked unspoken; nobody waits for them.
			c.log.Error("speak failed; the words go to the room marked unspoken", "body", c.cfg.Device, "err", e.err)
			m.Params.Metadata[protocol.MetaSpoken] = false
		} else {
			// A body that ignores hold played at once, perhaps over the
			// voice before it: the words were said, and what goes with them
			// is asked for now. From now on it gets its words at the start.
			c.log.Warn("the device played without waiting for speak.start (it ignores hold), perhaps over the voice before it; from now on it is handed its words when the floor is free", "body", c.cfg.Device)
			c.noHold = true
			c.act(ctx, t.msgID, t.u.Actions)
			started := e.result.StartedAt
			if started.IsZero() {
				started = c.cfg.Clock.Now()
			}
			c.announceVoice(t.msgID, false, started, time.Duration(e.result.DurationMs)*time.Millisecond)
		}
		c.say(m)
		c.finish(t.grant, &m)
	default: // sequential: the Message goes out now that the audio has ended
		if c.cfg.Device != "" && t.started {
			started := e.result.StartedAt
			if started.IsZero() {
				started = t.startedAt
			}
			c.announceVoice(t.msgID, false, started, time.Duration(e.result.DurationMs)*time.Millisecond)
		}
		if e.said == nil {
			c.finish(t.grant, nil)
			return
		}
		c.say(*e.said)
		c.finish(t.grant, e.said)
	}
}

// finish ends the turn and records what was said for the grant.
func (c *Companion) finish(grant string, said *protocol.Message) {
	if t := c.turn; t != nil && t.grant == grant {
		if t.timer != nil {
			t.timer.Stop()
		}
		t.cancel()
		c.turn = nil
	}
	c.speaking = false
	c.replied(grant, said)
	if a := c.answered[grant]; a != nil {
		a.msg, a.done = said, true
	}
	c.status(Listening)
}

// bargeIn reacts to a user's Message while this companion speaks or is
// about to: the words stop (after the sentence, or at once), and a turn
// not yet started is given up.
func (c *Companion) bargeIn() {
	t := c.turn
	if t == nil || c.cfg.BargeIn == protocol.BargeInOff {
		return
	}
	if !t.started {
		c.log.Info("barge-in: a user spoke; the turn not yet started is given up", "message", t.grant)
		c.m.IgnoredGrants.WithLabelValues("barge_in").Inc()
		c.finish(t.grant, nil)
		return
	}
	if c.cfg.Device == "" {
		return
	}
	at := c.cfg.BargeIn
	t.stopping = true
	c.log.Info("barge-in: a user spoke; stopping", "at", at, "message", t.msgID)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := query.SpeakStop(ctx, c.cfg.Queries, c.cfg.Device, at, 5*time.Second); err != nil {
			c.log.Warn("speak.stop failed", "body", c.cfg.Device, "err", err)
		}
	}()
}

// speakQuery asks the companion's device to say req. A result the device
// answered but that does not decode is counted and logged, and stands for
// a result that says nothing (the words were said).
func (c *Companion) speakQuery(ctx context.Context, req protocol.SpeakRequest, timeout time.Duration) (protocol.SpeakResult, error) {
	res, err := query.Speak(ctx, c.cfg.Queries, c.cfg.Device, req, timeout)
	if errors.Is(err, query.ErrBadResult) {
		c.cfg.Room.Metrics.Reject(c.log, "result", c.cfg.Device, string(protocol.KindOf(err)), err)
		return protocol.SpeakResult{}, nil
	}
	return res, err
}

// announceVoice publishes this companion's speaking status (retained) and
// notes it at once (its copy from the broker changes nothing).
func (c *Companion) announceVoice(msgID string, speaking bool, startedAt time.Time, d time.Duration) {
	now := c.cfg.Clock.Now()
	v := voice{msgID: msgID, speaking: speaking, ended: now}
	if speaking {
		v = voice{msgID: msgID, speaking: true, until: now.Add(d + protocol.VoiceMargin)}
	}
	c.voices[c.me()] = v
	s := protocol.Speaking{MessageID: msgID, Speaking: speaking, StartedAt: startedAt, DurationMs: int(min(d, protocol.MaxSpeakingMs*time.Millisecond) / time.Millisecond)}
	c.said = &s
	if err := c.cfg.Room.QueueSpeaking(c.out, c.me(), s); err != nil {
		c.log.Warn("speaking status not published", "err", err)
	}
}

// message builds the Message for words u; the actions taken with them
// are in its metadata (their names), for the transcript and the console.
func (c *Companion) message(id string, u brain.Utterance) protocol.Message {
	var to []string
	for _, t := range u.To {
		if protocol.ValidIdentity(t) == "" {
			to = append(to, t)
		}
	}
	m := protocol.NewMessage(id, c.me(), to, u.Text, u.Emotion)
	if u.Cut {
		m.Params.Metadata[protocol.MetaCut] = true
	}
	if len(u.Actions) > 0 && c.cfg.Device != "" {
		names := make([]any, 0, len(u.Actions))
		for _, a := range u.Actions {
			names = append(names, a.Name)
		}
		m.Params.Metadata[protocol.MetaActions] = names
	}
	return m
}

// act asks the body to do the turn's actions with its words: one action
// query each, tied to the words' message id, so the body starts them with
// the first audio. Nothing waits for them: the words go on whatever the
// body does with its hands.
func (c *Companion) act(ctx context.Context, msgID string, acts []protocol.ActionRequest) {
	if c.cfg.Device == "" {
		return
	}
	query.Acts(ctx, &c.wg, c.cfg.Queries, c.cfg.Device, msgID, acts, c.cfg.SpeakTimeout, c.m, c.log)
}

func (c *Companion) say(m protocol.Message) {
	if err := c.cfg.Room.QueueMessage(c.out, m); err != nil {
		c.log.Error("message not published", "err", err)
	}
}
