package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Talker is a brain that talks in realtime phases (the rule brain and the
// LLM brains): it answers with words, protocol.TalkListen or
// protocol.PostOver as the utterance's Text, and the body's actions to
// go with the words (Text and Actions are all a realtime room uses).
type Talker interface {
	Talk(ctx context.Context, in brain.TalkInput) (brain.Utterance, error)
}

// AgentConfig configures a companion in one space's realtime phases.
type AgentConfig struct {
	Room    *room.Room
	Channel string // "" for the room; else a whisper channel
	Card    brain.Card
	Brain   Talker
	// Device speaks the companion's accepted utterances ("" for a
	// text-only companion; never in a whisper channel). Queries asks it.
	Device  string
	Queries query.Asker
	// Actions lists what the device can do now; the brain is offered
	// them, and the device is asked for those it calls when the floor
	// broadcasts the words (nil: none).
	Actions func() []protocol.ActionDef

	PollInterval  time.Duration // ask the brain at least this often, default 500 ms
	SpeakCooldown time.Duration // never sooner than this after a post, default 3 s
	ThinkTimeout  time.Duration // per brain call, default 20 s
	SpeakTimeout  time.Duration // per speak query, default 30 s
	HistorySize   int           // talk kept for the brain, default 20
	Clock         clock.Clock
	Muted         func() bool // true: listen only (the mute button)
}

// Agent is the seed's realtime agent, bounded: on each broadcast, or every
// poll interval when nothing arrives, if the cooldown has passed and quota
// is left, it asks its brain (one call at a time); LISTEN never goes on
// the wire, Over is posted once, and the device speaks an utterance only
// after the floor accepted it (its broadcast). With no quota left it says
// Over by itself, so a phase of exhausted companions ends at once.
//
// # Concurrency
//
// One goroutine (Run) owns the state; brain calls and speaking run on
// goroutines it starts and waits for.
type Agent struct {
	cfg    AgentConfig
	log    *slog.Logger
	m      *metrics.Metrics
	events loop.Queue[agentEvent]
	out    *bus.Outbox
	wg     sync.WaitGroup

	// owned by Run
	phase    *agentPhase
	thinking bool
	failures int                  // brain calls failed in a row
	retryAt  time.Time            // after failures, no brain call before this
	voices   map[string]time.Time // members whose voice plays, until when at the latest
	ended    map[string]string    // per member, the message whose voice ended last
}

type agentPhase struct {
	id       string
	members  []string
	remain   int
	over     bool
	history  []protocol.Talk
	lastPost time.Time
	heard    time.Time // when the phase opened, or someone was last heard
	lastIdx  int
	poll     clock.Timer
	acts     []protocol.ActionRequest // of the post awaiting its broadcast
	overlap  bool                     // the phase's limits: posts accepted while someone speaks
	busy     *agentBusy               // an accepted utterance holds the floor (overlap false)
}

// agentBusy is the agent's view of the floor's hold: an accepted
// utterance holds a room of voices from its broadcast until its speaker's
// speaking status ends (at most its announced duration plus a margin, or
// StartGrace if it never starts), as the floor holds it. The agent neither
// thinks nor posts meanwhile: the floor would refuse it as floor_busy
// (issue 27: the realtime demo printed 170 such refusals).
type agentBusy struct {
	speaker, msgID string
	until          time.Time
}

type agentEvent struct {
	phase   *protocol.Phase
	msg     *protocol.Message
	ack     *protocol.PostAck
	tick    string // the phase whose poll fired
	thought *thought
	barrier chan struct{}
	voice   *room.SpeakingEvent
}

type thought struct {
	phase string
	said  brain.Utterance
	err   error
}

// NewAgent checks cfg and returns an Agent; Run starts it.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	if cfg.Room == nil || cfg.Brain == nil {
		return nil, errors.New("realtime: an agent needs its room and brain")
	}
	if err := cfg.Card.Validate(); err != nil {
		return nil, fmt.Errorf("realtime: %w", err)
	}
	if cfg.Device != "" && cfg.Queries == nil {
		return nil, errors.New("realtime: a device needs a query client")
	}
	if cfg.Channel != "" {
		cfg.Device = "" // a whisper is never said aloud
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.PollInterval, DefaultPollInterval)
	def(&cfg.SpeakCooldown, DefaultSpeakCooldown)
	def(&cfg.ThinkTimeout, brain.DefaultThinkTimeout)
	def(&cfg.SpeakTimeout, query.DefaultTimeout)
	if cfg.HistorySize <= 0 {
		cfg.HistorySize = HistoryKept
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Muted == nil {
		cfg.Muted = func() bool { return false }
	}
	log := cfg.Room.Log.With("companion", cfg.Card.ID, "realtime", cfg.Room.Name)
	if cfg.Channel != "" {
		log = log.With("channel", cfg.Channel)
	}
	m := cfg.Room.Metrics
	return &Agent{cfg: cfg, log: log, m: m,
		events: loop.NewQueue[agentEvent](queueSize, func(kind string) { m.QueueDrops.WithLabelValues("realtime-agent", kind).Inc() }),
		out: &bus.Outbox{Bus: cfg.Room.Bus, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.PublishDropped.WithLabelValues("realtime").Inc() }}}, nil
}

func (a *Agent) me() string { return a.cfg.Card.ID }

func (a *Agent) push(e agentEvent, kind string) { a.events.Push(e, kind) }

func (a *Agent) deliver(ctx context.Context, e agentEvent) {
	select {
	case a.events.C <- e:
	case <-ctx.Done():
	}
}

// Run subscribes and takes part in phases until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	r := a.cfg.Room
	ctx, cancel := context.WithCancel(ctx)
	defer a.wg.Wait()
	defer cancel()
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.out.Run(ctx) }()
	subs := []func() error{
		func() error {
			return r.OnPhase(ctx, a.cfg.Channel, func(p protocol.Phase) { a.push(agentEvent{phase: &p}, "phase") })
		},
		func() error {
			return r.OnBroadcasts(ctx, a.cfg.Channel, func(m protocol.Message) { a.push(agentEvent{msg: &m}, "message") })
		},
		func() error {
			return r.OnAcks(ctx, a.cfg.Channel, a.me(), func(_ string, ack protocol.PostAck) { a.push(agentEvent{ack: &ack}, "ack") })
		},
		func() error {
			return r.OnSpeaking(ctx, func(s room.SpeakingEvent) { a.push(agentEvent{voice: &s}, "speaking") })
		},
	}
	for _, s := range subs {
		if err := s(); err != nil {
			return fmt.Errorf("realtime agent %s: subscribe: %w", a.me(), err)
		}
	}
	defer func() {
		if p := a.phase; p != nil && p.poll != nil {
			p.poll.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-a.events.C:
			a.handle(ctx, e)
		}
	}
}

// Ping returns once the agent's loop has handled what was queued before it.
func (a *Agent) Ping(ctx context.Context) error {
	return a.events.Ping(ctx, func(done chan struct{}) agentEvent { return agentEvent{barrier: done} })
}

func (a *Agent) handle(ctx context.Context, e agentEvent) {
	switch {
	case e.barrier != nil:
		close(e.barrier)
	case e.phase != nil:
		a.onPhase(ctx, *e.phase)
	case e.msg != nil:
		a.onMessage(ctx, *e.msg)
	case e.ack != nil:
		a.onAck(ctx, *e.ack)
	case e.tick != "":
		if p := a.phase; p != nil && p.id == e.tick {
			a.maybeThink(ctx)
			a.schedule(ctx)
		}
	case e.thought != nil:
		a.onThought(ctx, *e.thought)
	case e.voice != nil:
		a.onVoice(*e.voice)
		if p := a.phase; p != nil && p.busy == nil {
			a.maybeThink(ctx) // a voice ended: the floor is free
		}
	}
}

// onVoice follows the room's voices: a robot talking is no silence, so
// the quiet a brain is told counts from the end of the last voice, not
// from the broadcast of its words (issue 18, item 9: paced audio made
// every robot say Over during the first long utterance).
func (a *Agent) onVoice(e room.SpeakingEvent) {
	if a.voices == nil {
		a.voices = map[string]time.Time{}
	}
	if a.ended == nil {
		a.ended = map[string]string{}
	}
	now := a.cfg.Clock.Now()
	p := a.phase
	if e.Cleared || !e.Speaking.Speaking {
		if _, ok := a.voices[e.ID]; ok && p != nil {
			p.heard = now
		}
		delete(a.voices, e.ID)
		if len(a.ended) < maxPresentVoices || a.ended[e.ID] != "" {
			a.ended[e.ID] = e.Speaking.MessageID
		}
		if p != nil && p.busy != nil && p.busy.speaker == e.ID {
			p.busy = nil
		}
		return
	}
	// A voice whose end never comes counts no longer than it announced.
	until := e.Speaking.StartedAt.Add(time.Duration(e.Speaking.DurationMs)*time.Millisecond + protocol.VoiceMargin)
	a.voices[e.ID] = until
	if p != nil && p.busy != nil && p.busy.speaker == e.ID {
		p.busy.until = until
	}
}

// maxPresentVoices bounds the agent's book of ended voices (one per member).
const maxPresentVoices = 1024

// busyNow reports whether an accepted utterance holds the floor now.
func (a *Agent) busyNow(p *agentPhase, now time.Time) bool {
	if p.overlap || p.busy == nil {
		return false
	}
	if !now.Before(p.busy.until) {
		p.busy = nil
		return false
	}
	return true
}

// quiet is how long nobody has been heard: 0 while a voice plays.
func (a *Agent) quiet(p *agentPhase, now time.Time) time.Duration {
	for _, until := range a.voices {
		if now.Before(until) {
			return 0
		}
	}
	return now.Sub(p.heard)
}

func (a *Agent) onPhase(ctx context.Context, p protocol.Phase) {
	cur := a.phase
	switch p.Event {
	case protocol.PhaseEnd:
		if cur != nil && cur.id == p.Phase {
			if cur.poll != nil {
				cur.poll.Stop()
			}
			a.phase = nil
			a.log.Info("realtime: phase ended", "phase", p.Phase, "reason", p.Reason)
		}
	case protocol.PhaseStart:
		if cur != nil && cur.id == p.Phase {
			return // a copy
		}
		if cur != nil && cur.poll != nil {
			cur.poll.Stop()
		}
		if !slices.Contains(p.Members, a.me()) {
			a.phase = nil
			return
		}
		remain, ok := p.Remain[a.me()]
		if !ok {
			remain = p.Limits.PerAgent
		}
		np := &agentPhase{id: p.Phase, members: p.Members, remain: remain, history: slices.Clone(p.History), heard: a.cfg.Clock.Now(),
			overlap: p.Limits.Overlap}
		for _, t := range p.History {
			np.lastIdx = max(np.lastIdx, t.Idx)
		}
		a.phase = np
		a.log.Info("realtime: phase open", "phase", p.Phase, "remaining", remain)
		a.maybeThink(ctx)
		a.schedule(ctx)
	}
}

// schedule sets the next poll of the open phase.
func (a *Agent) schedule(ctx context.Context) {
	p := a.phase
	if p == nil {
		return
	}
	if p.poll != nil {
		p.poll.Stop()
	}
	id := p.id
	p.poll = a.cfg.Clock.AfterFunc(a.cfg.PollInterval, func() { a.deliver(ctx, agentEvent{tick: id}) })
}

func (a *Agent) onMessage(ctx context.Context, m protocol.Message) {
	p := a.phase
	if p == nil {
		return
	}
	md := m.Params.Metadata
	from := m.Params.From
	var t protocol.Talk
	switch {
	case a.cfg.Room.Scheme.IsFloor(from):
		if ph, _ := md[protocol.MetaPhase].(string); ph != p.id {
			return // another phase's
		}
		idx, _ := md[protocol.MetaIdx].(float64)
		speaker, _ := md[protocol.MetaSpeaker].(string)
		if int(idx) <= p.lastIdx && int(idx) != 0 {
			return // a copy
		}
		t = protocol.Talk{Idx: int(idx), Agent: speaker, Text: m.Params.Message}
		p.lastIdx = max(p.lastIdx, t.Idx)
		if !p.overlap && speaker != "" && a.ended[speaker] != m.Params.ID {
			// The floor holds the room for these words until their voice ends.
			until := a.cfg.Clock.Now().Add(StartGrace)
			if v, ok := a.voices[speaker]; ok {
				until = v
			}
			p.busy = &agentBusy{speaker: speaker, msgID: m.Params.ID, until: until}
		}
		if speaker == a.me() && a.cfg.Device != "" {
			a.speak(ctx, m)
			query.Acts(ctx, &a.wg, a.cfg.Queries, a.cfg.Device, m.Params.ID, p.acts, a.cfg.SpeakTimeout, a.m, a.log)
		}
		if speaker == a.me() {
			p.acts = nil
		}
	case a.cfg.Room.IsMember(from):
		return // companions speak through the floor in this mode
	default:
		t = protocol.Talk{Idx: p.lastIdx, Agent: from, Text: m.Params.Message} // a person in the room
	}
	p.heard = a.cfg.Clock.Now()
	p.history = append(p.history, t)
	if len(p.history) > a.cfg.HistorySize {
		p.history = slices.Clone(p.history[len(p.history)-a.cfg.HistorySize:])
	}
	a.maybeThink(ctx)
}

func (a *Agent) onAck(ctx context.Context, ack protocol.PostAck) {
	p := a.phase
	if p == nil || ack.Phase != p.id {
		return
	}
	switch {
	case ack.Accepted && ack.Reason == "over":
	case ack.Accepted:
		p.remain = ack.Remaining
		if ack.Reason == protocol.WarnTruncated {
			a.log.Info("realtime: the floor cut the utterance to max_length", "idx", ack.Idx)
		}
	case ack.Reason == protocol.RejectQuotaExhausted:
		p.remain = 0
	default:
		a.log.Debug("realtime: post refused", "reason", ack.Reason)
		p.acts = nil // the words will not be said
	}
	if p.remain <= 0 && !p.over {
		a.post(protocol.PostOver) // nothing more may be said: let the phase end
	}
}

// maybeThink asks the brain when the companion may speak: a phase is open,
// it has not said Over, no call is in flight, the cooldown has passed, and
// quota is left.
func (a *Agent) maybeThink(ctx context.Context) {
	p := a.phase
	now := a.cfg.Clock.Now()
	if p == nil || p.over || a.thinking || p.remain <= 0 || a.cfg.Muted() || now.Before(a.retryAt) ||
		(!p.lastPost.IsZero() && now.Sub(p.lastPost) < a.cfg.SpeakCooldown) || a.busyNow(p, now) {
		return
	}
	a.thinking = true
	in := brain.TalkInput{Card: a.cfg.Card, Remaining: p.remain, History: slices.Clone(p.history), Members: p.members, Channel: a.cfg.Channel,
		Quiet: a.quiet(p, now)}
	if a.cfg.Actions != nil && a.cfg.Device != "" {
		in.Tools = tool.Actions(a.cfg.Actions())
	}
	id := p.id
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		tctx, cancel := context.WithTimeout(ctx, a.cfg.ThinkTimeout)
		said, err := a.cfg.Brain.Talk(tctx, in)
		cancel()
		a.deliver(ctx, agentEvent{thought: &thought{phase: id, said: said, err: err}})
	}()
}

// MaxRetryWait bounds the wait before the brain is asked again after
// failures in a row (the wait doubles from the speak cooldown).
const MaxRetryWait = 30 * time.Second

func (a *Agent) onThought(ctx context.Context, t thought) {
	a.thinking = false
	if t.err != nil {
		// A model that fails (down, refusing, calling tools it was not
		// offered) is not asked again every poll: the wait doubles.
		a.failures++
		a.retryAt = a.cfg.Clock.Now().Add(min(a.cfg.SpeakCooldown<<min(a.failures-1, 16), MaxRetryWait))
	} else {
		a.failures, a.retryAt = 0, time.Time{}
	}
	p := a.phase
	if p == nil || p.id != t.phase || p.over {
		return // the phase ended meanwhile
	}
	switch {
	case t.err != nil:
		reason := "error"
		if errors.Is(t.err, context.DeadlineExceeded) {
			reason = "timeout"
		}
		a.m.BrainFailures.WithLabelValues(reason).Inc()
		a.log.Warn("realtime: brain failed; listening", "err", t.err, "failures", a.failures, "retry_in", a.retryAt.Sub(a.cfg.Clock.Now()).Round(time.Millisecond))
	case t.said.Text == protocol.TalkListen:
	case t.said.Text == protocol.PostOver:
		a.post(protocol.PostOver)
	case a.busyNow(p, a.cfg.Clock.Now()):
		// Someone's words were accepted while these were written: the
		// floor would refuse them. They are dropped; the brain is asked
		// again, with what was said, when the voice ends.
		a.log.Debug("realtime: the floor is busy; words not posted", "speaker", p.busy.speaker)
		a.m.RealtimeHeld.Inc()
	default:
		a.post(t.said.Text)
		if !p.over {
			p.acts = t.said.Actions // done when the floor broadcasts the words
		}
	}
}

// post sends text (or Over, once) to the floor.
func (a *Agent) post(text string) {
	p := a.phase
	if p == nil || p.over {
		return
	}
	if text == protocol.PostOver {
		p.over = true
	}
	p.lastPost = a.cfg.Clock.Now()
	post := protocol.Post{From: a.me(), Phase: p.id, ID: protocol.NewID(), Text: text}
	if err := a.cfg.Room.QueuePost(a.out, a.cfg.Channel, post); err != nil {
		a.log.Warn("realtime: post not sent", "err", err)
	}
}

// speak says the companion's accepted utterance through its device, with
// its speaking status (the floor holds a room of voices until its end).
func (a *Agent) speak(ctx context.Context, m protocol.Message) {
	est := protocol.SpeechEstimate(m.Params.Message, a.cfg.Card.Language)
	started := a.cfg.Clock.Now()
	a.voice(m.Params.ID, true, started, est)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		req := protocol.SpeakRequest{Message: m.Params.Message, MessageID: m.Params.ID}
		res, err := query.Call(ctx, a.cfg.Queries, a.cfg.Device, query.Speak, req, a.cfg.SpeakTimeout)
		switch {
		case errors.Is(err, query.ErrBadResult): // said, but how long is unknown
			a.m.Reject(a.log, "result", a.cfg.Device, string(protocol.KindOf(err)), err)
		case err != nil:
			a.log.Error("realtime: speak failed", "device", a.cfg.Device, "err", err)
		}
		if !res.StartedAt.IsZero() {
			started = res.StartedAt
		}
		a.voice(m.Params.ID, false, started, time.Duration(res.DurationMs)*time.Millisecond)
	}()
}

func (a *Agent) voice(msgID string, speaking bool, started time.Time, d time.Duration) {
	s := protocol.Speaking{MessageID: msgID, Speaking: speaking, StartedAt: started,
		DurationMs: int(min(d, protocol.MaxSpeakingMs*time.Millisecond) / time.Millisecond)}
	if err := a.cfg.Room.QueueSpeaking(a.out, a.me(), s); err != nil {
		a.log.Warn("realtime: speaking status not published", "err", err)
	}
}
