package companion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/seen"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Companion is one persona in a room.
type Companion struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics.Metrics
	events loop.Queue[event]
	judge  repetition.Judge
	wg     sync.WaitGroup
	out    *bus.Outbox
	tools  *tool.Registry // what the model may call, and agents (tools.go)
	// presentNow is the companions present as Run last saw them, for
	// the companions_present tool, which the brain calls from its own
	// goroutine.
	presentNow atomic.Pointer[[]string]

	// owned by Run
	history  []protocol.Message
	present  map[string]bool
	heard    *seen.Set // message ids handled
	turnNo   int       // messages since the conversation (re)started
	count    int       // States since the last terminal (maxTurn)
	thoughts map[string]thoughtFor
	seq      int // increases with every thought, for evicting the oldest
	thinking int
	answered map[string]*answer            // grants acted on, by message id
	unheard  *unheard                      // words the room rested on while votes were owed
	answers  []string                      // their ids, oldest first (bounded)
	spoke    int                           // seq of the newest thought granted and acted on
	voted    *vote                         // the newest State whose grant has not been seen
	took     thinkTimes                    // how long the brain took, for the announced think time
	told     time.Time                     // when the think time was last announced
	audio    map[string]voice              // each member's speaking status
	persons  map[string]personUtterance    // the people's utterances under way (personvoice.go)
	spoken   *seen.Set                     // the people's utterances ended
	said     *protocol.Speaking            // this companion's last speaking status, said again after a reconnect
	offline  bool                          // the room's latest presence of this companion says offline
	away     bool                          // this companion's connection is lost (until it is back)
	checking bool                          // a stillHere check is due
	turn     *turn                         // the granted turn being prepared or spoken
	order    uint64                        // messages heard, in order
	lastUser uint64                        // order of the newest user message
	rep      judging                       // the model's repetition judge
	thinks   map[string]context.CancelFunc // the thinks under way, by message id (at most maxThinking)
	stopped  *seen.Set                     // thinks stopped because nobody needs them
	mem      *memory.Keeper                // the memory's keeper (memory.go); nil without a memory
	touched  map[string]bool               // people this companion answered in this run (bounded; replied.go)
	noHold   bool                          // the body ignores the speak hold (Config.NoHold, or seen playing at once)
	closer   closer                        // how far this companion has closed the conversation
	eager    *eagerThink                   // the think on a person's words so far (eager.go)
	eagerN   int                           // thinks on words so far started, for their ids
	// identifies is set once a heard Message said whose voice it was: the
	// room's robots tell voices apart, and a think on words so far (whose
	// voice is not known yet) recalls nobody's facts.
	identifies bool
	eagerIDs   *seen.Set           // their ids (their events are not a Message's)
	adopted    map[string]adoption // thinks on words so far that became a Message's, by their ids
}

// vote is a State sent and not yet seen decided.
type vote struct {
	state   protocol.State
	arrived time.Time // when its message arrived
	timer   clock.Timer
}

type thoughtFor struct {
	in      brain.Input
	thought brain.Thought
	seq     int
	arrived time.Time // when its message arrived
	order   uint64    // its message's place in the order heard
	words   *words    // the draft as it is written (a brain that streams)
	early   bool      // the State left before the draft was complete
	ruled   bool      // answered by the rules (a memory command): the draft is the words
}

type event struct {
	kind     int
	msg      protocol.Message
	grant    protocol.TurnGrant
	presence room.PresenceEvent
	id       string
	in       brain.Input
	thought  brain.Thought
	took     time.Duration // a successful brain call's latency; 0 when it failed
	said     *protocol.Message
	barrier  chan struct{}
	arrived  time.Time
	order    uint64
	utter    brain.Utterance
	result   protocol.SpeakResult
	err      error
	speaking room.SpeakingEvent
	heard    protocol.Heard
	score    float64
	words    *words
	whole    bool // evPrepared: utter is the whole utterance
	forgets  protocol.ForgetLog
}

const (
	evMessage = iota
	evGrant
	evPresence
	evThought
	evSpeak
	evSpoke
	evBarrier
	evResend
	evSpeaking
	evPrepared
	evStartCheck
	evJudged
	evVote
	evDrafted
	evRest
	evForgets
	evReconnected
	evLost
	evStillHere
	evHeard
	evEagerDue
	evPersonSure
)

// New checks cfg and returns a Companion; Run starts it.
func New(cfg Config) (*Companion, error) {
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	log := cfg.Room.Log.With("companion", cfg.Card.ID)
	m := cfg.Room.Metrics
	c := &Companion{
		cfg: cfg,
		log: log,
		m:   m,
		events: loop.NewQueue[event](queueSize, func(kind string) {
			m.QueueDrops.WithLabelValues("companion", kind).Inc()
			m.Reject(log, "companion", "", "queue_full", errors.New("companion event queue full"))
		}),
		judge:    repetition.Judge{Window: cfg.Window},
		present:  map[string]bool{},
		heard:    seen.New(recentMessages),
		thoughts: map[string]thoughtFor{},
		answered: map[string]*answer{},
		audio:    map[string]voice{},
		persons:  map[string]personUtterance{},
		spoken:   seen.New(maxEnded),
		noHold:   cfg.NoHold,
		thinks:   map[string]context.CancelFunc{},
		stopped:  seen.New(recentMessages),
		touched:  map[string]bool{},
		adopted:  map[string]adoption{},
		eagerIDs: seen.New(recentMessages),
		out: &bus.Outbox{Bus: cfg.Room.Bus, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.PublishDropped.WithLabelValues("companion").Inc() }},
	}
	c.mem = c.newKeeper()
	if c.tools, err = c.newTools(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Companion) push(e event, kind string) { c.events.Push(e, kind) }

func (c *Companion) status(s Status) {
	if c.cfg.OnStatus != nil {
		c.cfg.OnStatus(s)
	}
}

// Run subscribes and acts until ctx ends; it returns after every goroutine
// it started has stopped.
func (c *Companion) Run(ctx context.Context) error {
	r := c.cfg.Room
	ctx, cancel := context.WithCancel(ctx)
	defer c.wg.Wait()
	defer cancel()
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.out.Run(ctx) }()
	if c.mem != nil {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.mem.Run(ctx) }()
		defer c.mem.Stop() // what people said and was not written yet, by the rules (the store is safe beside Run)
	}
	if err := r.OnPresence(ctx, func(p room.PresenceEvent) { c.push(event{kind: evPresence, presence: p}, "presence") }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnGrant(ctx, func(g protocol.TurnGrant) { c.push(event{kind: evGrant, grant: g}, "grant") }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnMessage(ctx, func(m protocol.Message) { c.push(event{kind: evMessage, msg: m}, "message") }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnSpeaking(ctx, func(s room.SpeakingEvent) { c.push(event{kind: evSpeaking, speaking: s}, "speaking") }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnHeard(ctx, func(h protocol.Heard) { c.push(event{kind: evHeard, heard: h}, "heard") }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if rc, ok := r.Bus.(interface{ OnReconnect(func()) }); ok {
		// A broker restarted without its retained messages, or another
		// broker of the list, may not have the speaking status or the
		// forget log: say them again.
		rc.OnReconnect(func() { c.push(event{kind: evReconnected}, "reconnected") })
	}
	if rc, ok := r.Bus.(interface{ OnLost(func()) }); ok {
		rc.OnLost(func() { c.push(event{kind: evLost}, "lost") })
	}
	if c.mem != nil {
		if err := r.OnForgets(ctx, func(l protocol.ForgetLog) { c.push(event{kind: evForgets, forgets: l}, "forgets") }); err != nil {
			return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
		}
	}
	if c.mem != nil && c.cfg.Memory.Share {
		// The store is safe for concurrent use, and Shared only queues.
		if err := r.OnShared(ctx, c.mem.Shared); err != nil {
			return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
		}
	}
	if c.mem != nil {
		c.mem.Resume()
	}
	c.status(Listening)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-c.events.C:
			c.handle(ctx, e)
		}
		c.held()
	}
}

// held reports how much the companion holds: thinking drains when the
// room rests; thoughts, answers and heard ids are bounded books.
func (c *Companion) held() {
	h := c.m.Held
	h.WithLabelValues("companion_thinking").Set(float64(c.thinking))
	h.WithLabelValues("companion_thoughts").Set(float64(len(c.thoughts)))
	h.WithLabelValues("companion_answered").Set(float64(len(c.answered)))
	h.WithLabelValues("companion_history").Set(float64(len(c.history)))
	h.WithLabelValues("companion_heard_ids").Set(float64(c.heard.Len()))
	h.WithLabelValues("companion_events_queued").Set(float64(len(c.events.C)))
}

// deliver hands an event from a goroutine of ours back to Run.
func (c *Companion) deliver(ctx context.Context, e event) {
	select {
	case c.events.C <- e:
	case <-ctx.Done():
	}
}

func (c *Companion) handle(ctx context.Context, e event) {
	switch e.kind {
	case evPresence:
		if e.presence.ID == c.me() {
			c.offline = e.presence.Cleared || !e.presence.Presence.Online
			if c.offline && !c.checking && c.cfg.Presence != nil {
				c.checking = true
				c.cfg.Clock.AfterFunc(stillHereAfter, func() { c.push(event{kind: evStillHere}, "still-here") })
			}
		}
		if !e.presence.Cleared && e.presence.Presence.Online {
			if len(c.present) < maxPresent || c.present[e.presence.ID] {
				c.present[e.presence.ID] = true
			}
			c.backOnline(e.presence.ID)
		} else {
			delete(c.present, e.presence.ID)
		}
		list := c.presentList()
		c.presentNow.Store(&list)
		c.maybeStart(ctx) // a speaker gone holds nobody up
	case evMessage:
		c.onMessage(ctx, e.msg)
	case evThought:
		if c.eagerEvent(&e) {
			c.onThought(ctx, e)
		}
	case evGrant:
		c.onGrant(ctx, e.grant)
	case evSpeak:
		if t := c.turnFor(e.id); t != nil {
			t.speak(ctx, c.thoughts[e.id])
		}
	case evBarrier:
		close(e.barrier)
	case evSpoke:
		if t := c.turnFor(e.id); t != nil {
			t.onSpoke(ctx, e)
		}
	case evResend:
		c.resend(ctx, e.id)
	case evSpeaking:
		c.onSpeaking(ctx, e.speaking)
	case evHeard:
		c.onHeard(ctx, e.heard)
	case evPrepared:
		if t := c.turnFor(e.id); t != nil {
			t.onPrepared(ctx, e.utter, e.whole)
		}
	case evVote:
		if c.eagerEvent(&e) {
			c.onVote(ctx, e)
		}
	case evPersonSure:
		c.surePerson(e.id, e.heard.Utterance)
	case evEagerDue:
		if c.eager != nil && c.eager.id == e.id {
			c.voidEager(ctx, "no Message came")
		}
	case evDrafted:
		if t := c.turnFor(e.id); t != nil {
			t.onDrafted(ctx, e.utter)
		}
	case evJudged:
		c.onJudged(e)
	case evRest:
		c.mem.Rest()
	case evForgets:
		c.mem.Forget(e.forgets)
	case evLost:
		c.away = true
	case evStillHere:
		c.checking = false
		if c.offline && !c.away {
			c.stillHere()
		}
	case evReconnected:
		c.away = false
		if c.said != nil {
			if err := c.cfg.Room.QueueSpeaking(c.out, c.me(), *c.said); err != nil {
				c.log.Warn("speaking status not published again", "err", err)
			}
		}
		if c.mem != nil {
			c.mem.Republish()
		}
	case evStartCheck:
		if t := c.turnFor(e.id); t != nil {
			t.maybeStart(ctx)
		}
	}
}

// Ping returns once the companion's loop has handled everything queued
// before it (for the watchdog).
func (c *Companion) Ping(ctx context.Context) error {
	return c.events.Ping(ctx, func(done chan struct{}) event { return event{kind: evBarrier, barrier: done} })
}

func (c *Companion) me() string { return c.cfg.Card.ID }

// onMessage hears m and votes on it: m joins the conversation, then the
// brain's input is made, then the vote — listen at once when this
// companion may not answer, else its brain thinks (onThought votes).
func (c *Companion) onMessage(ctx context.Context, m protocol.Message) {
	if !c.heard.Add(m.Params.ID) {
		c.m.Duplicates.WithLabelValues("companion", "message").Inc()
		return // seen already (at-least-once delivery, or an answer published again)
	}
	listens := c.cfg.Muted() || wakeWord(m)
	var ex *eagerThink // a think on the words so far that m says
	var exCancel context.CancelFunc
	if listens {
		c.voidEager(ctx, "muted, or a wake word")
	} else {
		ex, exCancel = c.takeEager(ctx, m)
	}
	order := c.follow(m)
	arrived := c.cfg.Clock.Now()
	before := c.keep(m)
	c.askJudge(ctx)
	if m.Params.From == c.me() {
		return // nobody votes on their own words
	}
	in := c.input(m, before)
	if asks, forMe := protocol.SayRequest(m, c.me()); listens || asks && !forMe {
		c.listen(ctx, m.Params.ID)
		return
	} else if asks && c.isUser(m.Params.From) {
		c.say(ctx, m, event{kind: evThought, id: m.Params.ID, in: in, arrived: arrived, order: order})
		return
	}
	e := event{kind: evThought, id: m.Params.ID, in: in, arrived: arrived, order: order}
	if ex != nil {
		if c.mem != nil && personal(m) {
			defer c.mem.Journal(heard(m)) // after the vote: its fsync is not on the turn's way
			c.mem.Heard(ctx, heard(m))
		}
		c.adopt(ctx, ex, m, e, exCancel)
		return
	}
	var people []string // for a recall by meaning
	if c.mem != nil && c.isUser(m.Params.From) {
		if c.control(ctx, m, e) {
			return // a memory command: the rules answer it
		}
		if personal(m) {
			defer c.mem.Journal(heard(m)) // once the think has started: its fsync is not on the turn's way
			in, people = c.recall(ctx, m, in)
		}
	}
	in.Tools = c.toolsFor(m)
	if c.thinking >= maxThinking {
		c.cfg.Room.Metrics.BrainFailures.WithLabelValues("busy").Inc()
		c.listen(ctx, m.Params.ID)
		return
	}
	e.in = in
	c.startThinking(ctx, e, people)
}

// follow takes m into the conversation and returns its place in the
// order heard. A user's message restarts a rested or closing
// conversation, and whoever speaks stops (barge-in); older grants are
// void. A say request (an agent's words for one robot to say) is not a
// person speaking: it stops nobody and cancels no think, as a robot's
// words do not.
func (c *Companion) follow(m protocol.Message) uint64 {
	c.order++
	if say, _ := protocol.SayRequest(m, c.me()); c.isUser(m.Params.From) && !say {
		c.heardMessage()
		c.turnNo, c.count, c.closer = 0, 0, closer{}
		c.lastUser = c.order
		c.rep = judging{gen: c.rep.gen + 1, busy: c.rep.busy} // one question out at most
		if c.turn != nil {
			c.turn.bargeIn()
		}
		c.stopThinking("")
	} else {
		c.turnNo++
	}
	if c.unheard != nil && m.Params.ID != c.unheard.msg.Params.ID {
		c.unheard = nil // newer words: the floor decides the rested ones no more
	}
	return c.order
}

// keep adds m to the bounded history and returns what was said before it
// (m is judged, not history).
func (c *Companion) keep(m protocol.Message) []protocol.Message {
	before := slices.Clone(c.history)
	c.history = append(c.history, m)
	if len(c.history) > c.cfg.HistorySize {
		c.history = slices.Clone(c.history[len(c.history)-c.cfg.HistorySize:])
	}
	return before
}

// input is the brain's input for m, said after before: with the closing
// instruction when a judge finds the conversation repeating.
func (c *Companion) input(m protocol.Message, before []protocol.Message) brain.Input {
	in := brain.Input{Card: c.cfg.Card, History: before, Message: m, Present: c.presentList(),
		Members: c.cfg.Room.MemberList(), Turn: c.turnNo, Remaining: -1, Events: c.known(m)}
	if by := c.repeats(); by != "" {
		in.ClosingInstruction = brain.ClosingInstruction(c.cfg.Card.Language)
		c.log.Info("repetition judge: the conversation repeats; asking to close", "message", m.Params.ID, "by", by)
	}
	return in
}

// wakeWord reports whether m is a wake word: it opens the room's ears and
// barged in (follow); it is not a question: nobody answers it, the person
// goes on talking.
func wakeWord(m protocol.Message) bool {
	wake, _ := m.Params.Metadata[protocol.MetaWake].(bool)
	return wake
}

// listen votes listen on message id at once, without its brain.
func (c *Companion) listen(ctx context.Context, id string) {
	c.publishState(ctx, id, brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone})
}

func (c *Companion) presentList() []string {
	out := make([]string, 0, len(c.present))
	for p := range c.present {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (c *Companion) onThought(ctx context.Context, e event) {
	c.thinking--
	c.announce(e.took)
	if c.turn == nil {
		c.status(Listening)
	}
	delete(c.thinks, e.id)
	stopped := c.stopped.Has(e.id)
	if tf, ok := c.thoughts[e.id]; ok && tf.early {
		// The State left early (onVote): the thought completes the draft.
		// A think that failed after its vote takes the vote back, unless it
		// was stopped because nobody needs it any more.
		t := e.thought
		tf.thought.Draft, tf.thought.Emotion, tf.thought.To, tf.thought.Actions, tf.thought.Cut = t.Draft, t.Emotion, t.To, t.Actions, t.Cut
		tf.thought.Deferred = t.Deferred
		if t.State != tf.thought.State && tf.thought.State == protocol.Speak && !stopped {
			tf.thought.State, tf.thought.Selected, tf.thought.Importance = protocol.Listen, false, 0
			c.log.Warn("the brain failed after its vote left; the vote is taken back (listen)", "message", e.id)
			c.publishState(ctx, e.id, tf.thought)
		}
		c.thoughts[e.id] = tf
		return
	}
	c.vote(ctx, e, false)
}

// onVote publishes a State the moment its brain has written it, while
// the draft is still being written (a brain that streams).
func (c *Companion) onVote(ctx context.Context, e event) {
	if _, ok := c.thoughts[e.id]; ok {
		return
	}
	c.vote(ctx, e, true)
}

// vote books the thought for message e.id and publishes its State.
func (c *Companion) vote(ctx context.Context, e event, early bool) {
	id, in, t := e.id, e.in, e.thought
	t = c.close(id, in.ClosingInstruction != "", t)
	t.Selected = t.Selected || brain.Addressed(c.cfg.Card, in.Message.Params) // not asked of the model
	if c.cfg.Muted() {
		t.State, t.Selected = protocol.Listen, false
	}
	c.seq++
	w := e.words
	if len(t.Deferred) > 0 {
		w = nil // its words are written once granted, from its tools' results
	}
	c.thoughts[id] = thoughtFor{in: in, thought: t, seq: c.seq, arrived: e.arrived, order: e.order, words: w, early: early}
	if len(c.thoughts) > maxThoughts {
		oldest, min := "", int(^uint(0)>>1)
		for k, v := range c.thoughts {
			if v.seq < min {
				oldest, min = k, v.seq
			}
		}
		delete(c.thoughts, oldest)
	}
	c.publishState(ctx, id, t)
}

// publishState sends the State for message id and keeps sending it again
// every ResendEvery until the grant for id is seen (a lost State), while
// the message is younger than ResendFor.
func (c *Companion) publishState(ctx context.Context, id string, t brain.Thought) {
	s := protocol.NewState(protocol.StateParams{ID: protocol.NewID(), From: c.me(), MessageID: id, State: t.State,
		Importance: t.Importance, Selected: t.Selected, Closing: t.Closing})
	if err := c.cfg.Room.QueueState(c.out, s); err != nil {
		c.log.Error("state not published", "message", id, "err", err)
	}
	c.stopResend()
	arrived := c.cfg.Clock.Now() // a State without a thought leaves as its message arrives
	if tf, ok := c.thoughts[id]; ok {
		arrived = tf.arrived
	}
	c.voted = &vote{state: s, arrived: arrived}
	c.voted.timer = c.cfg.Clock.AfterFunc(c.cfg.ResendEvery, func() { c.deliver(ctx, event{kind: evResend, id: id}) })
}

func (c *Companion) stopResend() {
	if c.voted != nil && c.voted.timer != nil {
		c.voted.timer.Stop()
	}
	c.voted = nil
}

func (c *Companion) resend(ctx context.Context, id string) {
	v := c.voted
	if v == nil || v.state.Params.MessageID != id {
		return
	}
	// Bounded by the message's age, not by a count: the floor may be
	// unable to hear for longer than a few resends (it waits for the votes
	// it could not hear, runtime/floor), and a message a minute old is no
	// longer a conversation under way.
	if c.cfg.Clock.Now().Sub(v.arrived) >= c.cfg.ResendFor {
		c.stopResend()
		return
	}
	if !c.away { // while the connection is lost, the State waits in the outbox already
		c.m.Resent.WithLabelValues("state").Inc()
		if err := c.cfg.Room.QueueState(c.out, v.state); err != nil {
			c.log.Warn("state not sent again", "message", id, "err", err)
		}
	}
	v.timer = c.cfg.Clock.AfterFunc(c.cfg.ResendEvery, func() { c.deliver(ctx, event{kind: evResend, id: id}) })
}
