// Package hearing is the room's side of hearing (docs/protocol.md,
// "Heard reports": one sentence, one Message). Every robot whose microphone heard a person
// reports it on its own heard/{companion} topic; when several robots hear
// the same sentence, the room must still get exactly one Message. The
// Arbiter, run beside the room's floor (the room's one authority), groups
// the reports of one utterance, picks one and publishes it as the
// person's Message.
//
// # The rule
//
// Two reports are of the same utterance when they come from different
// robots and their spans of speech overlap (by the robots' clocks, with
// Slack for clocks and detectors that disagree a little). The first
// report of an utterance opens a window of Window (150 ms by default);
// the window closes early once every present robot that hears has
// reported, and at once when only one such robot is present: a room
// with one microphone never waits. The report taken is the most
// confident, then the loudest (the robot closest to the person), then
// the one whose speech ended first, then the lowest companion id. It is
// published as a Message from the room's person (hearing.user) to
// everyone, with metadata source "voice", heardBy (the companion whose
// report was taken) and heardByAll (every companion that reported it in
// the window). The Message id is derived from the report's, so a floor
// that takes over and decides the same reports again publishes the same
// id, which every receiver handles once.
//
// A report that arrives after its utterance was decided (a slow speech
// engine) is set aside and counted as late; a report seen twice
// (at-least-once delivery) is handled once. A standby floor keeps the
// same books but publishes nothing.
//
// # Concurrency
//
// One goroutine (Run) owns all state. Bus callbacks push into a bounded
// queue and return; timers push into the same queue; publishes go through
// an outbox, so the loop never waits on the network.
package hearing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/seen"
)

// Defaults.
const (
	// DefaultWindow is how long the arbiter waits, after the first report
	// of an utterance arrives, for other robots' reports of it.
	DefaultWindow = 150 * time.Millisecond
	// DefaultSlack is how far apart two robots' spans of one utterance may
	// be and still overlap: clocks on a LAN (NTP) and two detectors'
	// starts and ends differ by this much.
	DefaultSlack = 300 * time.Millisecond
	// DefaultRemember is how long a decided utterance is kept to
	// recognise late reports of it.
	DefaultRemember = 30 * time.Second
	queueSize       = 1024
	maxOpen         = 64  // utterances waiting for their window at once
	maxDecided      = 256 // decided utterances remembered
	maxHearers      = 1024
	recentReports   = 4096
)

// Config configures an Arbiter.
type Config struct {
	Room *room.Room // with its roster set
	// User is the person's identity the Message is published as;
	// default protocol.DefaultHeardUser. The broker's ACL must let the
	// floor publish under it (topic.Scheme.WithVoice).
	User string
	// People are the identities the floor may publish a Message under
	// when a robot knows the voice (hearing.people; the broker's ACL lets
	// it: topic.Scheme.WithPeople).
	People []string
	Window time.Duration // default DefaultWindow
	Slack  time.Duration // default DefaultSlack
	// Active reports whether this host's floor leads the room; only then
	// does the arbiter publish. Nil means always.
	Active func() bool
	Clock  clock.Clock // default clock.Real
	// OnDecide, if set, is told of every decision (tests, the console's
	// view): the report taken and all the reports of the utterance.
	OnDecide func(taken protocol.Heard, all []protocol.Heard, published bool)
}

// Arbiter turns a room's heard reports into one Message per utterance.
type Arbiter struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics.Metrics
	events loop.Queue[event]
	out    *bus.Outbox

	// owned by Run
	hearers  map[string]bool // present companions whose bodies hear
	open     []*utterance
	decided  []decidedSpan
	reports  *seen.Set
	captions []*caption // the utterances under way whose words are forwarded (caption.go)
}

type event struct {
	heard    *protocol.Heard
	partial  *protocol.Heard
	presence *room.PresenceEvent
	due      *utterance
	ping     chan struct{}
}

// utterance is one person's sentence as the reports of it come in.
type utterance struct {
	reports []protocol.Heard
	start   time.Time // the earliest start reported
	end     time.Time // the latest end reported
	timer   clock.Timer
	closed  bool
}

type decidedSpan struct {
	start, end time.Time
	by         map[string]bool
	utts       map[string]bool // the reports' utterances, from + "\x00" + utterance
	at         time.Time
}

// New checks cfg and returns an Arbiter; Run starts it.
func New(cfg Config) (*Arbiter, error) {
	if cfg.Room == nil {
		return nil, errors.New("hearing: no room")
	}
	if cfg.User == "" {
		cfg.User = protocol.DefaultHeardUser
	}
	if why := protocol.ValidIdentity(cfg.User); why != "" {
		return nil, fmt.Errorf("hearing: user %q: %s", cfg.User, why)
	}
	if cfg.Room.Members[cfg.User] {
		return nil, fmt.Errorf("hearing: user %q is a companion of room %s: a person needs an identity of their own", cfg.User, cfg.Room.Name)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Slack <= 0 {
		cfg.Slack = DefaultSlack
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Active == nil {
		cfg.Active = func() bool { return true }
	}
	log := cfg.Room.Log.With("hearing", "arbiter", "room", cfg.Room.Name)
	m := cfg.Room.Metrics
	return &Arbiter{
		cfg: cfg,
		log: log,
		m:   m,
		events: loop.NewQueue[event](queueSize, func(kind string) {
			m.QueueDrops.WithLabelValues("hearing", kind).Inc()
		}),
		out: &bus.Outbox{Bus: cfg.Room.Bus, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.PublishDropped.WithLabelValues("hearing").Inc() }},
		hearers: map[string]bool{},
		reports: seen.New(recentReports),
	}, nil
}

// Ping returns once the loop has handled everything queued before it.
func (a *Arbiter) Ping(ctx context.Context) error {
	return a.events.Ping(ctx, func(done chan struct{}) event { return event{ping: done} })
}

// Run subscribes to the room's heard reports and presence, and decides
// until ctx ends.
func (a *Arbiter) Run(ctx context.Context) error {
	r := a.cfg.Room
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); a.out.Run(ctx) }()
	if err := r.OnPresence(ctx, func(p room.PresenceEvent) { a.events.Push(event{presence: &p}, "presence") }); err != nil {
		return fmt.Errorf("hearing: subscribe: %w", err)
	}
	if err := r.OnHeard(ctx, func(h protocol.Heard) {
		switch h.State {
		case "":
			a.events.Push(event{heard: &h}, "heard")
		case protocol.HeardPartial: // the words so far: forwarded as the room's caption
			a.events.Push(event{partial: &h}, "partial")
		} // the other states are no transcript: the companions follow those
	}); err != nil {
		return fmt.Errorf("hearing: subscribe: %w", err)
	}
	defer func() {
		for _, u := range a.open {
			u.timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-a.events.C:
			switch {
			case e.ping != nil:
				close(e.ping)
			case e.presence != nil:
				a.onPresence(*e.presence)
			case e.heard != nil:
				a.onHeard(*e.heard)
			case e.partial != nil:
				a.onPartial(*e.partial)
			case e.due != nil:
				a.close(e.due, "window")
			}
			a.m.Held.WithLabelValues("hearing_open").Set(float64(len(a.open)))
		}
	}
}

func (a *Arbiter) onPresence(p room.PresenceEvent) {
	if p.Cleared || !p.Presence.Online || !p.Presence.Hears {
		delete(a.hearers, p.ID)
	} else if len(a.hearers) < maxHearers {
		a.hearers[p.ID] = true
	}
	// A robot that left may be the one an open window waits for.
	for _, u := range slices.Clone(a.open) {
		if a.everyoneReported(u) {
			a.close(u, "all reported")
		}
	}
}

func (a *Arbiter) onHeard(h protocol.Heard) {
	if !a.reports.Add(h.From + "\x00" + h.ID) {
		a.m.Heard.WithLabelValues("duplicate").Inc()
		a.m.Duplicates.WithLabelValues("hearing", "heard").Inc()
		return
	}
	now := a.cfg.Clock.Now()
	a.forget(now)
	for _, d := range a.decided {
		if !d.by[h.From] && a.overlaps(h.Start, h.End, d.start, d.end) {
			a.m.Heard.WithLabelValues("late").Inc()
			a.log.Info("heard report arrived after its utterance was decided", "from", h.From, "text", h.Text,
				"late_by", now.Sub(d.at).Round(time.Millisecond))
			return
		}
	}
	for _, u := range a.open {
		if a.sameUtterance(u, h) {
			u.reports = append(u.reports, h)
			u.start, u.end = minTime(u.start, h.Start), maxTime(u.end, h.End)
			if a.everyoneReported(u) {
				a.close(u, "all reported")
			}
			return
		}
	}
	if len(a.open) >= maxOpen {
		a.close(a.open[0], "too many open")
	}
	u := &utterance{reports: []protocol.Heard{h}, start: h.Start, end: h.End}
	a.open = append(a.open, u)
	if a.everyoneReported(u) {
		a.close(u, "one microphone")
		return
	}
	u.timer = a.cfg.Clock.AfterFunc(a.cfg.Window, func() { a.events.Push(event{due: u}, "window") })
}

// sameUtterance: h overlaps u and its robot has not reported u already (a
// robot cuts one utterance once; two reports of one robot are two).
func (a *Arbiter) sameUtterance(u *utterance, h protocol.Heard) bool {
	for _, r := range u.reports {
		if r.From == h.From {
			return false
		}
	}
	return a.overlaps(h.Start, h.End, u.start, u.end)
}

func (a *Arbiter) overlaps(s1, e1, s2, e2 time.Time) bool {
	return !s1.After(e2.Add(a.cfg.Slack)) && !s2.After(e1.Add(a.cfg.Slack))
}

// everyoneReported: every present robot that hears has reported u (true
// at once in a room with one microphone, or when the reporter's presence
// is not known yet and nobody else hears).
func (a *Arbiter) everyoneReported(u *utterance) bool {
	by := map[string]bool{}
	for _, r := range u.reports {
		by[r.From] = true
	}
	for id := range a.hearers {
		if !by[id] {
			return false
		}
	}
	return true
}

// close decides u: the best report is published as the person's Message.
func (a *Arbiter) close(u *utterance, why string) {
	if u.closed {
		return
	}
	u.closed = true
	if u.timer != nil {
		u.timer.Stop()
	}
	a.open = slices.DeleteFunc(a.open, func(o *utterance) bool { return o == u })
	best := Best(u.reports)
	by, utts := map[string]bool{}, map[string]bool{}
	names := make([]string, 0, len(u.reports))
	for _, r := range u.reports {
		by[r.From] = true
		names = append(names, r.From)
		if r.Utterance != "" {
			utts[r.From+"\x00"+r.Utterance] = true
		}
	}
	a.captionsDecided(u)
	sort.Strings(names)
	now := a.cfg.Clock.Now()
	if len(a.decided) >= maxDecided {
		a.decided = a.decided[1:]
	}
	a.decided = append(a.decided, decidedSpan{start: u.start, end: u.end, by: by, utts: utts, at: now})
	a.m.Heard.WithLabelValues("same").Add(float64(len(u.reports) - 1))
	published := false
	if !a.cfg.Active() {
		a.m.Heard.WithLabelValues("standby").Inc()
	} else if err := a.cfg.Room.QueueMessage(a.out, a.Message(best, names, a.speaker(u.reports, best))); err != nil {
		a.log.Warn("heard utterance not published", "text", best.Text, "err", err)
	} else {
		published = true
		a.m.Heard.WithLabelValues("taken").Inc()
		a.log.Info("heard", "text", best.Text, "by", best.From, "reports", len(u.reports), "closed", why, "voice", voiceReading(u.reports))
	}
	if a.cfg.OnDecide != nil {
		a.cfg.OnDecide(best, slices.Clone(u.reports), published)
	}
}

// Message is the person's Message for the report taken, from who spoke
// it.
func (a *Arbiter) Message(taken protocol.Heard, heardBy []string, who speaker) protocol.Message {
	id := "voice-" + taken.From + "-" + taken.ID
	if len(id) > protocol.MaxIDLen {
		id = id[:protocol.MaxIDLen]
	}
	from := a.cfg.User
	if who.person != "" {
		from = who.person
	}
	m := protocol.NewMessage(id, from, nil, taken.Text, "")
	if who.identified {
		m.Params.Metadata[protocol.MetaVoice] = who.reading
		if who.person != "" {
			m.Params.Metadata[protocol.MetaVoiceDistance] = who.distance
		}
		if e := who.enrol; e != nil {
			enrol := map[string]any{"name": e.Name, "person": e.Person, "got": e.Got, "need": e.Need}
			if e.Taken {
				enrol["taken"] = true
			}
			m.Params.Metadata[protocol.MetaVoiceEnrol] = enrol
		}
	}
	m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
	m.Params.Metadata[protocol.MetaHeardBy] = taken.From
	all := make([]any, len(heardBy))
	for i, n := range heardBy {
		all[i] = n
	}
	m.Params.Metadata[protocol.MetaHeardDevices] = all
	if taken.Wake {
		m.Params.Metadata[protocol.MetaWake] = true
	}
	return m
}

// forget drops decided utterances older than DefaultRemember.
func (a *Arbiter) forget(now time.Time) {
	i := 0
	for i < len(a.decided) && now.Sub(a.decided[i].at) > DefaultRemember {
		i++
	}
	a.decided = a.decided[i:]
}

// Best is the report the room takes of one utterance's reports: the most
// confident (an engine that gives none counts below any that does), then
// the loudest, then the one whose speech ended first, then the lowest
// companion id.
func Best(reports []protocol.Heard) protocol.Heard {
	best := reports[0]
	for _, r := range reports[1:] {
		if better(r, best) {
			best = r
		}
	}
	return best
}

func better(a, b protocol.Heard) bool {
	switch {
	case a.Confidence != b.Confidence:
		return a.Confidence > b.Confidence
	case a.Level != b.Level:
		return a.Level > b.Level
	case !a.End.Equal(b.End):
		return a.End.Before(b.End)
	}
	return a.From < b.From
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
