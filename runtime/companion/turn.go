package companion

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// A turn is one granted utterance, from the grant to the words said: its
// words (the draft, a second brain call, or the draft as its model writes
// it), the wait for the floor's pause, the speak query to the body,
// a user's barge-in, and the Message that goes to the room (voice.go
// says how overlapped and sequential turns differ).
//
// The companion makes a turn on a grant and runs it on its loop: every
// method of a turn is called there, and its goroutines (on the
// companion's WaitGroup) only hand events back through host.deliver,
// which the companion routes to the turn of their grant. The turn tells
// the companion when it is over (host.ended).

// host is what a turn needs of its companion. Every method is called on
// the companion's loop, deliver aside.
type host interface {
	// deliver hands an event from a turn's goroutine back to the loop.
	deliver(ctx context.Context, e event)
	// status tells the companion's status LED.
	status(s Status)
	// publish says m to the room as the answer to grant.
	publish(grant string, m protocol.Message)
	// announceVoice publishes the companion's speaking status.
	announceVoice(msgID string, speaking bool, startedAt time.Time, d time.Duration)
	// voices is what the companion knows of each member's audio, and
	// here whether a member is in the room (the companion itself is).
	voices() map[string]voice
	here(id string) bool
	// personSpeaking is until when a person's utterance under way holds
	// the turn (zero: nobody is speaking).
	personSpeaking(now time.Time) time.Time
	// ended is told once that the turn is over, with what it said (nil:
	// nothing reached the room).
	ended(t *turn, said *protocol.Message)
}

// turn is the granted turn being prepared or spoken.
type turn struct {
	host host
	cfg  *Config // the companion's, read only
	log  *slog.Logger
	wg   *sync.WaitGroup // the companion's: Run waits for a turn's goroutines

	grant     string // the message answered
	msgID     string // the Message these words are
	token     string // the device's hold token
	after     time.Time
	heard     bool   // the answered message is a person's, heard: its voice ended a hangover before it came
	fromVoice string // the answered message's author, when its words were being spoken
	noHold    bool   // the body ignores the speak hold (learnt by this turn: told at its end)
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

// begin starts the turn granted for tf: overlapped, it prepares at once;
// sequential, it speaks after the pause (evSpeak).
func (t *turn) begin(ctx context.Context, tf thoughtFor) {
	if t.cfg.Overlap {
		t.prepare(ctx, tf)
		return
	}
	t.after, t.cancel = t.cfg.Clock.Now(), func() {}
	id := t.grant
	pause := t.cfg.Pause
	if t.personHeard(tf.in.Message) {
		pause = 0 // a person's voice ended a hangover before their Message came (startTime)
	}
	t.timer = t.cfg.Clock.AfterFunc(pause, func() { t.host.deliver(ctx, event{kind: evSpeak, id: id}) })
}

// personHeard reports whether m is a person's words heard by a microphone.
func (t *turn) personHeard(m protocol.Message) bool {
	return m.Params.Heard() && !t.cfg.Room.IsMember(m.Params.From)
}

// prepare readies the granted turn: the words, and the device's held speak.
func (t *turn) prepare(ctx context.Context, tf thoughtFor) {
	tctx, cancel := context.WithCancel(ctx)
	t.token, t.after, t.ctx, t.cancel = protocol.NewID()[:16], tf.arrived, tctx, cancel
	m := tf.in.Message
	if sp, _ := m.Params.Metadata[protocol.MetaSpeaking].(bool); sp && t.cfg.Room.IsMember(m.Params.From) {
		t.fromVoice = m.Params.From
	}
	t.heard = t.personHeard(m)
	t.host.status(Speaking)
	held := t.cfg.Device != "" && !t.noHold // the device prepares its speak now
	id, msgID, token := t.grant, t.msgID, t.token
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if tf.words != nil && held { // prepared on its first sentence
			res, err := t.speakWords(tctx, tf, token, t.cfg.SpeakTimeout+holdFor,
				func(u brain.Utterance, whole bool) {
					t.host.deliver(ctx, event{kind: evPrepared, id: id, utter: u, whole: whole})
				},
				func(u brain.Utterance) { t.host.deliver(ctx, event{kind: evDrafted, id: id, utter: u}) })
			t.host.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
			return
		}
		u, err := t.utterance(tctx, tf)
		if err != nil {
			t.host.deliver(ctx, event{kind: evSpoke, id: id, err: err})
			return
		}
		t.host.deliver(ctx, event{kind: evPrepared, id: id, utter: u, whole: true})
		if !held {
			return // text only, or a body without the hold: the start speaks
		}
		req := protocol.SpeakRequest{Message: u.Text, Emotion: u.Emotion, Hold: token, MessageID: msgID}
		res, err := t.speakQuery(tctx, req, t.cfg.SpeakTimeout+holdFor)
		t.host.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
	}()
}

// speak runs the turn in sequential mode once its pause has passed, with
// its thought as it is now: the words (draft or a second brain call), the
// speak query to the device — the status says the companion speaks —
// then, once the audio has ended, the Message (onSpoke).
func (t *turn) speak(ctx context.Context, tf thoughtFor) {
	t.started, t.startedAt = true, t.cfg.Clock.Now()
	tctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	if t.cfg.Device != "" {
		text := tf.thought.Draft
		t.host.announceVoice(t.msgID, true, t.startedAt, protocol.SpeechEstimate(text, t.cfg.Card.Language))
	}
	id, msgID := t.grant, t.msgID
	t.host.status(Speaking)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		var u brain.Utterance
		var res protocol.SpeakResult
		var err error
		switch {
		case tf.words != nil && t.cfg.Device != "": // spoken as it is written
			res, err = t.speakWords(tctx, tf, "", t.cfg.SpeakTimeout, nil, func(whole brain.Utterance) {
				u = whole
				t.host.deliver(ctx, event{kind: evDrafted, id: id, utter: whole})
			})
			if u.Text == "" {
				t.host.deliver(ctx, event{kind: evSpoke, id: id})
				return
			}
		default:
			if u, err = t.utterance(tctx, tf); err != nil {
				t.host.deliver(ctx, event{kind: evSpoke, id: id})
				return
			}
			if t.cfg.Device != "" {
				t.act(tctx, u.Actions)
				req := protocol.SpeakRequest{Message: u.Text, Emotion: u.Emotion, MessageID: msgID}
				res, err = t.speakQuery(tctx, req, t.cfg.SpeakTimeout)
			}
		}
		spoken := err == nil
		if !spoken && tctx.Err() == nil {
			t.log.Error("speak failed; the words go to the room marked unspoken", "body", t.cfg.Device, "err", err)
		}
		if tctx.Err() != nil || res.Stopped {
			// Cut off by a user: in this order the words would reach the
			// room after the user's, and be voted on instead of them.
			t.log.Info("barge-in: the words were cut off; not published", "message", msgID)
			t.host.deliver(ctx, event{kind: evSpoke, id: id, result: res})
			return
		}
		m := t.message(u)
		if !spoken { // never pass off as said what the robot did not say
			m.Params.Metadata[protocol.MetaSpoken] = false
		}
		t.host.deliver(ctx, event{kind: evSpoke, id: id, said: &m, result: res})
	}()
}

// utterance is the turn's words: the draft, or a second brain call.
func (t *turn) utterance(ctx context.Context, tf thoughtFor) (brain.Utterance, error) {
	u := brain.Utterance{Text: tf.thought.Draft, Emotion: tf.thought.Emotion, To: tf.thought.To, Actions: tf.thought.Actions, Cut: tf.thought.Cut}
	if tf.words != nil { // the draft as its model writes it: wait for the whole
		var err error
		u, err = tf.words.whole(ctx)
		if calls := tf.words.deferred(); err == nil && u.Text == "" && len(calls) > 0 {
			return t.utter(ctx, tf, calls) // the think asked for tools that act once its vote had left
		}
		if err == nil && u.Text == "" {
			err = errNoWords
		}
		if err != nil {
			t.log.Info("no words; the turn is given up", "message", t.grant, "err", err)
			return u, err
		}
	} else if (t.cfg.TwoCall && !tf.ruled) || u.Text == "" || len(tf.thought.Deferred) > 0 {
		return t.utter(ctx, tf, tf.thought.Deferred)
	}
	return withEmotion(u), nil
}

// utter is the granted turn's second brain call: calls, the tools that
// act its think asked for, run first, and the words are written from
// their results.
func (t *turn) utter(ctx context.Context, tf thoughtFor, calls []tool.Call) (brain.Utterance, error) {
	uctx, cancel := context.WithTimeout(ctx, t.cfg.ThinkTimeout)
	defer cancel()
	in := tf.in
	in.Instruction = tf.thought.Instruction // the instruction the events chose, in the State's call
	in.Calls = calls
	u, err := t.cfg.Brain.Utter(uctx, in)
	if err == nil && u.Text == "" {
		err = errNoWords
	}
	if err != nil {
		t.cfg.Room.Metrics.BrainFailures.WithLabelValues("utterance").Inc()
		t.log.Error("no utterance; the turn is given up", "message", t.grant, "err", err)
		return u, err
	}
	return withEmotion(u), nil
}

func (t *turn) onPrepared(ctx context.Context, u brain.Utterance, whole bool) {
	t.u, t.whole = &u, whole
	t.maybeStart(ctx)
}

// onDrafted completes the turn's words when the draft being spoken is
// whole: what goes with them is asked for, the speaking status gets the
// whole length, and (overlapped) the Message goes out, marked as being
// spoken. Before the start, the start does all that.
func (t *turn) onDrafted(ctx context.Context, u brain.Utterance) {
	if t.whole {
		return // whole already when it was prepared
	}
	t.u, t.whole = &u, true
	if !t.started {
		return
	}
	if t.cfg.Device != "" {
		t.act(ctx, u.Actions)
		now := t.cfg.Clock.Now()
		whole := protocol.SpeechEstimate(u.Text, t.cfg.Card.Language)
		left := max(whole-now.Sub(t.startedAt), 0) // statuses are timed from when they are heard
		t.estimate = whole
		t.host.announceVoice(t.msgID, true, t.startedAt, left)
	}
	if t.cfg.Overlap && !t.stopping {
		t.publishSpoken()
	}
}

// publishSpoken publishes the started turn's Message, marked as being
// spoken (overlapped turns); a repeated grant publishes it again.
func (t *turn) publishSpoken() {
	m := t.message(*t.u)
	m.Params.Metadata[protocol.MetaSpeaking] = true
	t.host.publish(t.grant, m)
	t.said = &m
}

// maybeStart starts the prepared turn once nobody else is speaking and the
// pause after the last voice has passed; otherwise it looks again at the
// next bound (and at every speaking status and presence change).
func (t *turn) maybeStart(ctx context.Context) {
	if t.started || t.u == nil {
		return
	}
	now := t.cfg.Clock.Now()
	at := t.startTime(now)
	if at.After(now) {
		if t.timer != nil {
			t.timer.Stop()
		}
		id := t.grant
		t.timer = t.cfg.Clock.AfterFunc(at.Sub(now), func() { t.host.deliver(ctx, event{kind: evStartCheck, id: id}) })
		return
	}
	t.start(ctx, now)
}

// startTime is when t may start: the pause after the latest end of any
// voice (or after the answered message, if no voice came since — not
// after a person's heard one: their voice ended a hangover, at least
// hangover_complete, before it came, and that silence is the pause),
// later while someone is still speaking — at most until that voice's
// bound.
func (t *turn) startTime(now time.Time) time.Time {
	last := t.after
	if t.heard {
		last = time.Time{}
	}
	var busy time.Time
	voices := t.host.voices()
	for id, v := range voices {
		switch {
		case v.speaking && now.Before(v.until) && t.host.here(id):
			busy = later(busy, v.until)
		case v.speaking:
			last = later(last, v.until) // its end never came: the bound stands for it
		default:
			last = later(last, v.ended)
		}
	}
	if t.fromVoice != "" && t.host.here(t.fromVoice) {
		if v, ok := voices[t.fromVoice]; !ok || v.msgID != t.grant {
			// Its words are being spoken, but their status has not come yet.
			if bound := t.after.Add(StatusGrace); now.Before(bound) {
				busy = later(busy, bound)
			}
		}
	}
	busy = later(busy, t.host.personSpeaking(now)) // never over a person: until their utterance ends
	if !busy.IsZero() {
		return busy // looked at again when a status changes, at this bound at the latest
	}
	return last.Add(t.cfg.Pause)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// start plays the prepared turn and publishes its Message, marked as
// being spoken.
func (t *turn) start(ctx context.Context, now time.Time) {
	t.started, t.startedAt = true, now
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.cfg.Device == "" {
		m := t.message(*t.u)
		t.host.publish(t.grant, m)
		t.finish(&m)
		return
	}
	token, id := t.token, t.grant
	req := protocol.SpeakRequest{Message: t.u.Text, Emotion: t.u.Emotion, MessageID: t.msgID}
	tctx, noHold := t.ctx, t.noHold
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if noHold { // its words now that the floor is free
			res, err := t.speakQuery(tctx, req, t.cfg.SpeakTimeout)
			t.host.deliver(ctx, event{kind: evSpoke, id: id, result: res, err: err})
			return
		}
		if _, err := query.Call(ctx, t.cfg.Queries, t.cfg.Device, query.SpeakStart, protocol.SpeakStart{Hold: token}, 5*time.Second); err != nil {
			t.log.Warn("speak.start failed; the held speak times out", "body", t.cfg.Device, "err", err)
		}
	}()
	t.estimate = protocol.SpeechEstimate(t.u.Text, t.cfg.Card.Language)
	t.host.announceVoice(t.msgID, true, now, t.estimate)
	if t.whole { // else when the draft is complete (onDrafted)
		t.act(ctx, t.u.Actions)
		t.publishSpoken()
	}
}

// onSpoke ends the turn when the device's speak result (or failure) is in.
func (t *turn) onSpoke(ctx context.Context, e event) {
	switch {
	case t.started && t.cfg.Overlap:
		started, d := e.result.StartedAt, time.Duration(e.result.DurationMs)*time.Millisecond
		if started.IsZero() {
			started = t.startedAt
		}
		if t.noHold && e.err == nil && d == 0 && e.result.StartedAt.IsZero() {
			// No length: the body may still be playing; its voice lasts
			// the estimate, and the room hears its end then.
			d = t.estimate
			if rest := t.startedAt.Add(d).Sub(t.cfg.Clock.Now()); rest > 0 {
				res := protocol.SpeakResult{StartedAt: started, DurationMs: d.Milliseconds()}
				if t.timer != nil {
					t.timer.Stop()
				}
				t.timer = t.cfg.Clock.AfterFunc(rest, func() { t.host.deliver(ctx, event{kind: evSpoke, id: e.id, result: res}) })
				return
			}
		}
		t.host.announceVoice(t.msgID, false, started, d)
		if e.err != nil {
			t.log.Error("speak failed after it started", "body", t.cfg.Device, "err", e.err)
		}
		t.finish(t.said)
	case t.cfg.Overlap:
		if t.u == nil {
			t.finish(nil) // no words at all: the turn is given up
			return
		}
		m := t.message(*t.u)
		if e.err != nil {
			// Failed before it started (no TTS, no audio): the words go to
			// the room at once, marked unspoken; nobody waits for them.
			t.log.Error("speak failed; the words go to the room marked unspoken", "body", t.cfg.Device, "err", e.err)
			m.Params.Metadata[protocol.MetaSpoken] = false
		} else {
			// A body that ignores hold played at once, perhaps over the
			// voice before it: the words were said, and what goes with them
			// is asked for now. From now on it gets its words at the start.
			t.log.Warn("the device played without waiting for speak.start (it ignores hold), perhaps over the voice before it; from now on it is handed its words when the floor is free", "body", t.cfg.Device)
			t.noHold = true
			t.act(ctx, t.u.Actions)
			started := e.result.StartedAt
			if started.IsZero() {
				started = t.cfg.Clock.Now()
			}
			t.host.announceVoice(t.msgID, false, started, time.Duration(e.result.DurationMs)*time.Millisecond)
		}
		t.host.publish(t.grant, m)
		t.finish(&m)
	default: // sequential: the Message goes out now that the audio has ended
		if t.cfg.Device != "" && t.started {
			started := e.result.StartedAt
			if started.IsZero() {
				started = t.startedAt
			}
			t.host.announceVoice(t.msgID, false, started, time.Duration(e.result.DurationMs)*time.Millisecond)
		}
		if e.said == nil {
			t.finish(nil)
			return
		}
		t.host.publish(t.grant, *e.said)
		t.finish(e.said)
	}
}

// finish ends the turn and tells the companion what was said.
func (t *turn) finish(said *protocol.Message) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.cancel()
	t.host.ended(t, said)
}

// bargeIn reacts to a user's Message while this turn is spoken or about
// to be: the words stop (after the sentence, or at once), and a turn not
// yet started is given up.
func (t *turn) bargeIn() { t.stop(t.cfg.BargeIn, "a user spoke") }

// yield stops words that began over a person already speaking, at once
// (docs/hearing.md): the person is heard to the end of their sentence.
func (t *turn) yield() {
	if t.cfg.BargeIn != protocol.BargeInOff {
		t.stop(protocol.BargeInImmediate, "a person was already speaking")
	}
}

// stop stops the words (at, unless barge-in is off) for why, or gives up
// a turn not yet started.
func (t *turn) stop(at protocol.BargeIn, why string) {
	if at == protocol.BargeInOff || t.stopping {
		return
	}
	if !t.started {
		t.log.Info("barge-in: the turn not yet started is given up", "why", why, "message", t.grant)
		t.cfg.Room.Metrics.IgnoredGrants.WithLabelValues("barge_in").Inc()
		t.finish(nil)
		return
	}
	if t.cfg.Device == "" {
		return
	}
	t.stopping = true
	t.log.Info("barge-in: stopping", "why", why, "at", at, "message", t.msgID)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := query.Call(ctx, t.cfg.Queries, t.cfg.Device, query.SpeakStop, protocol.SpeakStop{At: at}, 5*time.Second); err != nil {
			t.log.Warn("speak.stop failed", "body", t.cfg.Device, "err", err)
		}
	}()
}

// speakQuery asks the companion's device to say req. A result the device
// answered but that does not decode is counted and logged, and stands for
// a result that says nothing (the words were said).
func (t *turn) speakQuery(ctx context.Context, req protocol.SpeakRequest, timeout time.Duration) (protocol.SpeakResult, error) {
	res, err := query.Call(ctx, t.cfg.Queries, t.cfg.Device, query.Speak, req, timeout)
	if errors.Is(err, query.ErrBadResult) {
		t.cfg.Room.Metrics.Reject(t.log, "result", t.cfg.Device, string(protocol.KindOf(err)), err)
		return protocol.SpeakResult{}, nil
	}
	return res, err
}

// message builds the turn's Message for words u; the actions taken with
// them are in its metadata (their names), for the transcript and the
// console.
func (t *turn) message(u brain.Utterance) protocol.Message {
	var to []string
	for _, p := range u.To {
		if protocol.ValidIdentity(p) == "" {
			to = append(to, p)
		}
	}
	m := protocol.NewMessage(t.msgID, t.cfg.Card.ID, to, u.Text, u.Emotion)
	if u.Cut {
		m.Params.Metadata[protocol.MetaCut] = true
	}
	if len(u.Actions) > 0 && t.cfg.Device != "" {
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
func (t *turn) act(ctx context.Context, acts []protocol.ActionRequest) {
	if t.cfg.Device == "" {
		return
	}
	query.Acts(ctx, t.wg, t.cfg.Queries, t.cfg.Device, t.msgID, acts, t.cfg.SpeakTimeout, t.cfg.Room.Metrics, t.log)
}
