// Package companion is the agent of one persona in a room: it keeps a
// bounded history, turns every message into a State with its brain (and a
// draft of what it would say), and when the floor grants it the turn, waits
// the configured pause, speaks through its device (a speak query) and
// publishes its Message once the speak result is back, as aikyo does.
//
// Closing follows aikyo-closing: the brain says the stage; the local
// repetition judge adds the closing instruction to the brain's input when
// the last utterances are too alike; MaxTurn forces terminal; a message from
// a user (anyone who is not a present companion) restarts a rested room.
//
// # Concurrency
//
// One goroutine (Run) owns the companion's state. Brain calls and speaking
// run on goroutines Run starts and waits for; every wait has a timeout.
package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Defaults.
const (
	DefaultHistory      = 10
	DefaultPause        = 300 * time.Millisecond
	DefaultThinkTimeout = 20 * time.Second
	DefaultSpeakTimeout = 30 * time.Second
	maxThinking         = 4
	maxThoughts         = 32
	queueSize           = 1024
	maxPresent          = 1024 // companions followed in one room
)

// Asker sends a query to a device and waits for its result
// (runtime/query.Client).
type Asker interface {
	Ask(ctx context.Context, device, typ string, body any, timeout time.Duration) (json.RawMessage, error)
}

// Status is what the companion is doing, for a status LED.
type Status string

const (
	Listening Status = "listening"
	Thinking  Status = "thinking"
	Speaking  Status = "speaking"
	Failed    Status = "error"
)

// Config configures a Companion.
type Config struct {
	Room  *room.Room
	Card  brain.Card
	Brain brain.Brain

	// Device is the companion's own body, asked to "speak"; empty means a
	// text-only companion. Queries sends the query.
	Device  string
	Queries Asker

	HistorySize  int           // messages kept, default 10
	Pause        time.Duration // wait after a grant before speaking, default 300 ms
	MaxTurn      int           // States before terminal is forced; 0 = no limit
	Threshold    float64       // repetition threshold, default 0.7
	Window       int           // repetition window, default 5
	TwoCall      bool          // brain.draft: false — ask Utter after the grant
	ThinkTimeout time.Duration // per brain call, default 20 s
	SpeakTimeout time.Duration // speak query, default 30 s
	Clock        clock.Clock

	// Muted, when it returns true, makes the companion vote listen and never
	// take the floor (the mute button).
	Muted func() bool
	// OnStatus is told every status change; it must not block.
	OnStatus func(Status)
}

// Companion is one persona in a room.
type Companion struct {
	cfg    Config
	log    *slog.Logger
	events chan event
	judge  repetition.Judge
	wg     sync.WaitGroup

	// owned by Run
	history  []protocol.Message
	present  map[string]bool
	turn     int // messages since the conversation (re)started
	count    int // States since the last terminal (maxTurn)
	thoughts map[string]thoughtFor
	seq      int // increases with every thought, for evicting the oldest
	thinking int
	speaking bool
}

type thoughtFor struct {
	in      brain.Input
	thought brain.Thought
	seq     int
}

type event struct {
	kind     int
	msg      protocol.Message
	grant    protocol.TurnGrant
	presence room.PresenceEvent
	id       string
	in       brain.Input
	thought  brain.Thought
	barrier  chan struct{}
}

const (
	evMessage = iota
	evGrant
	evPresence
	evThought
	evSpeak
	evSpoke
	evBarrier
)

// New checks cfg and returns a Companion; Run starts it.
func New(cfg Config) (*Companion, error) {
	if cfg.Room == nil || cfg.Brain == nil {
		return nil, errors.New("companion: room and brain are required")
	}
	if err := cfg.Card.Validate(); err != nil {
		return nil, fmt.Errorf("companion: %w", err)
	}
	if cfg.Device != "" && cfg.Queries == nil {
		return nil, errors.New("companion: a device needs a query client")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.HistorySize <= 0 {
		cfg.HistorySize = DefaultHistory
	}
	def(&cfg.Pause, DefaultPause)
	def(&cfg.ThinkTimeout, DefaultThinkTimeout)
	def(&cfg.SpeakTimeout, DefaultSpeakTimeout)
	if cfg.Threshold <= 0 {
		cfg.Threshold = repetition.DefaultThreshold
	}
	if cfg.Window <= 0 {
		cfg.Window = repetition.DefaultWindow
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Muted == nil {
		cfg.Muted = func() bool { return false }
	}
	return &Companion{
		cfg:      cfg,
		log:      cfg.Room.Log.With("companion", cfg.Card.ID),
		events:   make(chan event, queueSize),
		judge:    repetition.Judge{Window: cfg.Window},
		present:  map[string]bool{},
		thoughts: map[string]thoughtFor{},
	}, nil
}

func (c *Companion) push(e event) {
	select {
	case c.events <- e:
	default:
		c.cfg.Room.Metrics.Reject(c.log, "companion", "", "queue_full", errors.New("companion event queue full"))
	}
}

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
	if err := r.OnPresence(ctx, func(p room.PresenceEvent) { c.push(event{kind: evPresence, presence: p}) }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnGrant(ctx, func(g protocol.TurnGrant) { c.push(event{kind: evGrant, grant: g}) }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	if err := r.OnMessage(ctx, func(m protocol.Message) { c.push(event{kind: evMessage, msg: m}) }); err != nil {
		return fmt.Errorf("companion %s: %w", c.cfg.Card.ID, err)
	}
	c.status(Listening)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-c.events:
			c.handle(ctx, e)
		}
	}
}

// deliver hands an event from a goroutine of ours back to Run.
func (c *Companion) deliver(ctx context.Context, e event) {
	select {
	case c.events <- e:
	case <-ctx.Done():
	}
}

func (c *Companion) handle(ctx context.Context, e event) {
	switch e.kind {
	case evPresence:
		if !e.presence.Cleared && e.presence.Presence.Online {
			if len(c.present) < maxPresent || c.present[e.presence.ID] {
				c.present[e.presence.ID] = true
			}
		} else {
			delete(c.present, e.presence.ID)
		}
	case evMessage:
		c.onMessage(ctx, e.msg)
	case evThought:
		c.onThought(ctx, e.id, e.in, e.thought)
	case evGrant:
		c.onGrant(ctx, e.grant)
	case evSpeak:
		c.speak(ctx, e.id)
	case evBarrier:
		close(e.barrier)
	case evSpoke:
		c.speaking = false
		c.status(Listening)
	}
}

// Ping returns once the companion's loop has handled everything queued
// before it (for the watchdog).
func (c *Companion) Ping(ctx context.Context) error {
	return loop.Ping(ctx, c.events, func(done chan struct{}) event { return event{kind: evBarrier, barrier: done} })
}

func (c *Companion) me() string { return c.cfg.Card.ID }

func (c *Companion) onMessage(ctx context.Context, m protocol.Message) {
	from := m.Params.From
	if from != c.me() && !c.present[from] {
		// A user spoke: a rested or closing conversation starts again.
		c.turn, c.count = 0, 0
	} else {
		c.turn++
	}
	c.history = append(c.history, m)
	if len(c.history) > c.cfg.HistorySize {
		c.history = slices.Clone(c.history[len(c.history)-c.cfg.HistorySize:])
	}
	if from == c.me() {
		return // nobody votes on their own words
	}
	in := brain.Input{Card: c.cfg.Card, History: slices.Clone(c.history), Message: m, Present: c.presentList(), Turn: c.turn, Remaining: -1}
	if c.judge.Score(c.texts()) > c.cfg.Threshold {
		in.ClosingInstruction = brain.ClosingInstruction(c.cfg.Card.Language)
		c.log.Info("repetition judge: the conversation repeats; asking to close", "message", m.Params.ID)
	}
	if c.cfg.Muted() {
		c.publishState(ctx, m.Params.ID, brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone})
		return
	}
	if c.thinking >= maxThinking {
		c.cfg.Room.Metrics.BrainFailures.WithLabelValues("busy").Inc()
		c.publishState(ctx, m.Params.ID, brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone})
		return
	}
	c.thinking++
	c.status(Thinking)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := c.think(ctx, in)
		c.deliver(ctx, event{kind: evThought, id: m.Params.ID, in: in, thought: t})
	}()
}

func (c *Companion) texts() []string {
	out := make([]string, 0, len(c.history))
	for _, m := range c.history {
		out = append(out, m.Params.Message)
	}
	return out
}

func (c *Companion) presentList() []string {
	out := make([]string, 0, len(c.present))
	for p := range c.present {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// think asks the brain, retrying once; a second failure becomes listen
// with importance 0 (DESIGN.md: bad model output never stalls the room).
func (c *Companion) think(ctx context.Context, in brain.Input) brain.Thought {
	var err error
	for attempt := range 2 {
		tctx, cancel := context.WithTimeout(ctx, c.cfg.ThinkTimeout)
		var t brain.Thought
		t, err = c.cfg.Brain.Think(tctx, in)
		cancel()
		if err == nil {
			if t.Closing == "" {
				t.Closing = protocol.ClosingNone
			}
			if err = t.Validate(); err == nil {
				return t
			}
		}
		if ctx.Err() != nil {
			break
		}
		c.log.Warn("brain failed", "attempt", attempt+1, "message", in.Message.Params.ID, "err", err)
	}
	reason := "error"
	if errors.Is(err, context.DeadlineExceeded) {
		reason = "timeout"
	}
	c.cfg.Room.Metrics.BrainFailures.WithLabelValues(reason).Inc()
	c.status(Failed)
	return brain.Thought{State: protocol.Listen, Importance: 0, Closing: protocol.ClosingNone}
}

func (c *Companion) onThought(ctx context.Context, id string, in brain.Input, t brain.Thought) {
	c.thinking--
	if !c.speaking {
		c.status(Listening)
	}
	// maxTurn, as aikyo: count States; at the limit force terminal.
	if c.cfg.MaxTurn > 0 {
		switch {
		case t.Closing == protocol.ClosingTerminal:
			c.count = 0
		case c.count >= c.cfg.MaxTurn:
			t.Closing, t.State = protocol.ClosingTerminal, protocol.Listen
			c.count = 0
		default:
			c.count++
		}
	}
	if c.cfg.Muted() {
		t.State, t.Selected = protocol.Listen, false
	}
	c.seq++
	c.thoughts[id] = thoughtFor{in: in, thought: t, seq: c.seq}
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

func (c *Companion) publishState(ctx context.Context, id string, t brain.Thought) {
	s := protocol.NewState(protocol.StateParams{From: c.me(), MessageID: id, State: t.State, Importance: t.Importance, Selected: t.Selected, Closing: t.Closing})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.cfg.Room.SendState(pctx, s); err != nil && ctx.Err() == nil {
		c.log.Error("state not published", "message", id, "err", err)
	}
}

func (c *Companion) onGrant(ctx context.Context, g protocol.TurnGrant) {
	if g.SpeakerID() != c.me() {
		return
	}
	tf, ok := c.thoughts[g.MessageID]
	switch {
	case !ok:
		c.log.Warn("granted a turn for a message it did not vote on", "message", g.MessageID)
		return
	case tf.thought.Closing == protocol.ClosingTerminal:
		c.log.Info("granted the floor at terminal: the conversation is over for this companion")
		return
	case c.cfg.Muted():
		return
	case c.speaking:
		c.log.Warn("granted while still speaking; skipped", "message", g.MessageID)
		return
	}
	c.speaking = true
	id := g.MessageID
	c.cfg.Clock.AfterFunc(c.cfg.Pause, func() { c.deliver(ctx, event{kind: evSpeak, id: id}) })
}

// speak runs the granted turn on its own goroutine: utterance (draft or a
// second brain call), speak query to the device, then the Message.
func (c *Companion) speak(ctx context.Context, id string) {
	tf := c.thoughts[id]
	c.status(Speaking)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.deliver(ctx, event{kind: evSpoke})
		u := brain.Utterance{Text: tf.thought.Draft, Emotion: tf.thought.Emotion, To: tf.thought.To}
		if c.cfg.TwoCall || u.Text == "" {
			uctx, cancel := context.WithTimeout(ctx, c.cfg.ThinkTimeout)
			var err error
			u, err = c.cfg.Brain.Utter(uctx, tf.in)
			cancel()
			if err != nil || u.Text == "" {
				c.cfg.Room.Metrics.BrainFailures.WithLabelValues("utterance").Inc()
				c.log.Error("no utterance; the turn is given up", "message", id, "err", err)
				return
			}
		}
		if u.Emotion == "" || !u.Emotion.Valid() {
			u.Emotion = protocol.EmotionNeutral
		}
		if c.cfg.Device != "" {
			body := map[string]string{"message": u.Text, "emotion": string(u.Emotion)}
			if _, err := c.cfg.Queries.Ask(ctx, c.cfg.Device, "speak", body, c.cfg.SpeakTimeout); err != nil {
				c.log.Error("speak failed; the words still go to the room", "device", c.cfg.Device, "err", err)
			}
		}
		var to []string
		for _, t := range u.To {
			if protocol.ValidIdentity(t) == "" {
				to = append(to, t)
			}
		}
		m := protocol.NewMessage(protocol.NewID(), c.me(), to, u.Text, u.Emotion)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.cfg.Room.SendMessage(pctx, m); err != nil && ctx.Err() == nil {
			c.log.Error("message not published", "err", err)
		}
	}()
}
