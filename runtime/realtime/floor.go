// Package realtime is the realtime room mode: the aiwolf realtime talk
// design — a talk server for AI agents playing the werewolf game (AIWolf),
// where agents speak whenever they like within hard limits (a rate, a
// quota per agent and per day, a length, phase and silence timeouts)
// instead of taking turns — over the room's MQTT topics, as
// docs/protocol.md ("Realtime mode") writes it down. In a talk phase
// anyone speaks when their brain decides to, like a group chat; the floor
// enforces the hard limits, numbers each accepted utterance and broadcasts
// it.
//
// Floor is the server side, one per space: the room itself or one of its
// whisper channels. Agent is a companion's side. The design's packets map
// onto the wire as:
//
//	TALK_START     → a retained Phase start on phase: limits, each member's remain_count, the recent talk_history (idx)
//	agent's text   → a Post on floor/in/{me}, tagged with the phase id
//	(the server's reply, which the seed does not have) → a PostAck on floor/out/{me}: the idx, or a reason
//	TALK_BROADCAST → a message.send on the room's messages topic from the floor, metadata {phase, idx, remain_count, speaker}
//	TALK_END       → a retained Phase end, with the reason
//
// Where Chorus differs from the seed: an empty or refused post costs no
// quota; a post tagged with an ended phase is answered phase_closed
// (instead of the seed's 2-second drain of stale messages); a companion
// whose presence goes offline stops counting for "all Over"; in a room of
// voices (overlap false) a post is accepted only while nobody speaks, and
// the accepted speaker holds the floor until its device says the audio
// ended (bounded by the duration it announced plus a margin). The floor's
// loop never waits on the network: everything it publishes goes through
// a bounded outbox, and the broker, not the floor, holds a slow reader's
// queue. Posts and Messages wait in a bounded queue that drops and counts
// a flood; presence, speaking status, leadership and a phase's timers wait
// in a mailbox that never drops one (control.go). Which instance runs the
// room is the room's one election (Leader, runtime/election).
package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Limits are a phase's hard limits (config room.realtime).
type Limits struct {
	PhaseTimeout   time.Duration
	SilenceTimeout time.Duration
	RateLimit      time.Duration
	PerAgent       int
	PerDay         int
	PerTalk        int // runes
	Overlap        bool
}

func (l Limits) wire() protocol.Limits {
	return protocol.Limits{RateLimitMs: int(l.RateLimit.Milliseconds()), PerAgent: l.PerAgent, PerDay: l.PerDay,
		MaxLength: l.PerTalk, PhaseTimeoutMs: int(l.PhaseTimeout.Milliseconds()), SilenceTimeoutMs: int(l.SilenceTimeout.Milliseconds()),
		Overlap: l.Overlap}
}

// Validate names the first limit that is not above zero.
func (l Limits) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"phase_timeout", l.PhaseTimeout}, {"silence_timeout", l.SilenceTimeout}, {"rate_limit", l.RateLimit}} {
		if d.v <= 0 {
			return fmt.Errorf("realtime: %s must be above zero, got %v", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"per_agent", l.PerAgent}, {"per_day", l.PerDay}, {"per_talk", l.PerTalk}} {
		if n.v <= 0 {
			return fmt.Errorf("realtime: %s must be above zero, got %d", n.name, n.v)
		}
	}
	return nil
}

const (
	// StartGrace is how long an accepted speaker holds the floor before
	// its device says its audio started.
	StartGrace = 5 * time.Second
	// HistoryKept is the talk_history a phase start carries.
	HistoryKept = 20
	queueSize   = 4096 // posts and messages waiting for the loop
	// MaxFollowed bounds the companions whose presence and speaking
	// status a floor follows at once (the roster bounds them already).
	MaxFollowed = 1024
	outboxSize  = 4096 // what the floor publishes: a burst of posts gets every answer
	seenPosts   = 4096 // post ids remembered, to answer a copy the same way
)

// FloorConfig configures one space's floor.
type FloorConfig struct {
	Room    *room.Room
	Channel string   // "" for the room; else a whisper channel
	Members []string // who may post: the room's roster, or the channel's
	ID      string   // the floor identity its broadcasts come from
	Limits  Limits
	Clock   clock.Clock
	// OpenOnMessage opens a phase when a user's Message arrives while none
	// is open (the room's space; whisper phases open on command only).
	OpenOnMessage bool
	// Leader says whether this instance runs the room (nil: always).
	Leader *Leader
}

// Floor runs realtime phases in one space.
type Floor struct {
	cfg     FloorConfig
	log     *slog.Logger
	m       *metrics.Metrics
	events  loop.Queue[event] // posts, messages, timers, commands
	ctl     *control          // presence, speaking, leadership: never dropped
	out     *bus.Outbox
	members map[string]bool

	// owned by Run
	present map[string]bool
	voices  map[string]protocol.Speaking
	phase   *phase
	seen    *protocol.Phase             // the last phase event on the bus (retained): what a predecessor left
	n       int                         // phases opened
	acks    map[string]protocol.PostAck // answers of recent posts, by post id
	order   []string                    // their ids, oldest first
}

type phase struct {
	id       string
	opened   time.Time
	last     time.Time // the last accepted utterance (or the opening)
	idx      int       // the last idx given
	count    map[string]int
	total    int
	accepted map[string]time.Time // each member's last accepted post
	over     map[string]bool
	history  []protocol.Talk
	busy     *busy
	timeout  clock.Timer
	silence  clock.Timer
}

// busy is the accepted speaker holding a room of voices.
type busy struct {
	speaker string
	msgID   string
	until   time.Time
	timer   clock.Timer
}

type event struct {
	post    *protocol.Post
	msg     *protocol.Message
	tick    string    // a timer of the phase with this id fired
	at      time.Time // when it fired
	cmd     *command
	barrier chan struct{} // a Ping: closed once handled
}

type command struct {
	start  bool
	reason string
	done   chan error
}

// NewFloor checks cfg and returns a Floor; Run starts it.
func NewFloor(cfg FloorConfig) (*Floor, error) {
	if cfg.Room == nil || cfg.ID == "" {
		return nil, errors.New("realtime: a floor needs its room and identity")
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Members) == 0 {
		return nil, errors.New("realtime: a floor needs the members who may post")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Channel != "" {
		cfg.Limits.Overlap = true // whispers are not spoken aloud
	}
	log := cfg.Room.Log.With("realtime", cfg.Room.Name)
	if cfg.Channel != "" {
		log = log.With("channel", cfg.Channel)
	}
	m := cfg.Room.Metrics
	f := &Floor{cfg: cfg, log: log, m: m, ctl: newControl(),
		events:  loop.NewQueue[event](queueSize, func(kind string) { m.QueueDrops.WithLabelValues("realtime", kind).Inc() }),
		members: map[string]bool{}, present: map[string]bool{}, voices: map[string]protocol.Speaking{},
		acks: map[string]protocol.PostAck{},
		out: &bus.Outbox{Bus: cfg.Room.Bus, Size: outboxSize, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.PublishDropped.WithLabelValues("realtime").Inc() }}}
	for _, id := range cfg.Members {
		f.members[id] = true
	}
	return f, nil
}

func (f *Floor) push(e event, kind string) { f.events.Push(e, kind) }

// Start opens a phase (the operator's `chorus phase start`); it fails if
// one is open.
func (f *Floor) Start(ctx context.Context) error { return f.command(ctx, command{start: true}) }

// End ends the open phase (the operator's `chorus phase end`).
func (f *Floor) End(ctx context.Context) error {
	return f.command(ctx, command{reason: protocol.EndOperator})
}

// command runs c on the loop, after everything queued before it.
func (f *Floor) command(ctx context.Context, c command) error {
	c.done = make(chan error, 1)
	select {
	case f.events.C <- event{cmd: &c}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run subscribes and runs phases until ctx ends.
func (f *Floor) Run(ctx context.Context) error {
	r := f.cfg.Room
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); f.out.Run(ctx) }()
	subs := []func() error{
		func() error {
			return r.OnPresence(ctx, func(p room.PresenceEvent) {
				if !f.ctl.presenceEvent(p) {
					f.m.Reject(f.log, "presence", p.ID, "too_many", fmt.Errorf("more than %d companions followed; %s ignored", MaxFollowed, p.ID))
				}
			})
		},
		func() error {
			return r.OnPosts(ctx, f.cfg.Channel, func(p protocol.Post) { f.push(event{post: &p}, "post") })
		},
		func() error {
			return r.OnSpeaking(ctx, func(s room.SpeakingEvent) {
				if !f.ctl.voice(s) {
					f.m.Reject(f.log, "speaking", s.ID, "too_many", fmt.Errorf("more than %d companions followed; %s ignored", MaxFollowed, s.ID))
				}
			})
		},
	}
	subs = append(subs, func() error {
		return r.OnPhase(ctx, f.cfg.Channel, f.ctl.phase)
	})
	if l := f.cfg.Leader; l != nil {
		l.OnChange(f.ctl.leader)
	}
	if f.cfg.OpenOnMessage {
		subs = append(subs, func() error {
			return r.OnMessage(ctx, func(m protocol.Message) { f.push(event{msg: &m}, "message") })
		})
	}
	for _, s := range subs {
		if err := s(); err != nil {
			return fmt.Errorf("realtime floor: subscribe: %w", err)
		}
	}
	defer f.stopTimers()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.ctl.wake.C:
			f.control()
		case e := <-f.events.C:
			// Control events come first: a post is judged knowing who is
			// present and speaking, and a Ping proves both were handled.
			select {
			case <-f.ctl.wake.C:
				f.control()
			default:
			}
			f.handle(e)
		}
	}
}

// StandbyError is what a standby floor answers an operator's phase
// command with. A client that saw the claim of an instance that is not
// active yet (the claim is on its way back to it) may ask again.
const StandbyError = "realtime: this floor stands by; another instance runs the room"

// Ping returns once the floor's loop has handled what was queued before
// it, control events included (for the watchdog).
func (f *Floor) Ping(ctx context.Context) error {
	return f.events.Ping(ctx, func(done chan struct{}) event { return event{barrier: done} })
}

// Flush waits until everything the floor has handled so far is published.
func (f *Floor) Flush(ctx context.Context) error {
	if err := f.Ping(ctx); err != nil {
		return err
	}
	return f.out.Flush(ctx)
}

func (f *Floor) onCommand(c command) error {
	switch {
	case c.start && f.phase != nil:
		return fmt.Errorf("realtime: phase %s is open", f.phase.id)
	case c.start:
		f.open(nil)
		return nil
	case f.phase == nil:
		return errors.New("realtime: no phase is open")
	default:
		f.end(c.reason)
		return nil
	}
}

func (f *Floor) handle(e event) {
	lead := f.cfg.Leader == nil || f.cfg.Leader.Active()
	switch {
	case e.barrier != nil:
		close(e.barrier)
	case e.cmd != nil && !lead:
		e.cmd.done <- errors.New(StandbyError)
	case e.cmd != nil:
		e.cmd.done <- f.onCommand(*e.cmd)
	case (e.post != nil || e.msg != nil) && !lead:
		// The active floor answers.
	case e.post != nil:
		f.onPost(*e.post)
	case e.msg != nil:
		f.onMessage(*e.msg)
	case e.tick != "":
		f.onTick(e.tick, e.at)
	}
}

// control handles what the mailbox holds: the phase last seen, then the
// leadership, then presence and speaking status in order of companion id,
// then the timers a full queue could not take, oldest first.
func (f *Floor) control() {
	d := f.ctl.take()
	if d.seen != nil {
		f.seen = d.seen
	}
	if d.down {
		f.onLeader(false) // it stood by meanwhile, whatever it is now
	}
	if d.active != nil && (*d.active || !d.down) {
		f.onLeader(*d.active)
	}
	for _, id := range slices.Sorted(maps.Keys(d.presence)) {
		f.onPresence(d.presence[id])
	}
	for _, id := range slices.Sorted(maps.Keys(d.voices)) {
		f.onVoice(d.voices[id])
	}
	ticks := slices.SortedFunc(maps.Keys(d.ticks), func(a, b string) int {
		if c := d.ticks[a].Compare(d.ticks[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, name := range ticks {
		f.onTick(name, d.ticks[name])
	}
}

func (f *Floor) onPresence(p room.PresenceEvent) {
	if !p.Cleared && p.Presence.Online {
		f.present[p.ID] = true
		return
	}
	delete(f.present, p.ID)
	if b := f.busyWith(); b != nil && b.speaker == p.ID {
		f.release() // a speaker gone holds nobody up
	}
	f.checkAllOver()
}

// onLeader follows this instance's leadership: taking over, it ends the
// phase a predecessor left open; standing by, it forgets its own.
func (f *Floor) onLeader(active bool) {
	if !active {
		if f.phase != nil {
			f.stopTimers()
			f.phase = nil
		}
		return
	}
	if s := f.seen; s != nil && s.Event == protocol.PhaseStart && (f.phase == nil || f.phase.id != s.Phase) {
		f.log.Warn("realtime: taking over; the phase the last floor left open ends", "phase", s.Phase)
		f.publishPhase(protocol.Phase{From: f.cfg.ID, Phase: s.Phase, Event: protocol.PhaseEnd, Kind: s.Kind, Channel: f.cfg.Channel,
			Reason: EndFloorChanged, Limits: f.cfg.Limits.wire()})
	}
}

// open starts a phase; opener is the user message that opened it, if any.
func (f *Floor) open(opener *protocol.Message) {
	now := f.cfg.Clock.Now()
	f.n++
	kind := protocol.PhaseTalk
	if f.cfg.Channel != "" {
		kind = protocol.PhaseWhisper
	}
	id := fmt.Sprintf("%s-%d-%s", kind, f.n, protocol.NewID()[:8])
	p := &phase{id: id, opened: now, last: now, count: map[string]int{}, accepted: map[string]time.Time{}, over: map[string]bool{}}
	if opener != nil {
		p.history = append(p.history, protocol.Talk{Idx: 0, Agent: opener.Params.From, Text: opener.Params.Message})
	}
	f.phase = p
	remain := map[string]int{}
	for _, m := range f.cfg.Members {
		remain[m] = f.cfg.Limits.PerAgent
	}
	f.publishPhase(protocol.Phase{From: f.cfg.ID, Phase: id, Event: protocol.PhaseStart, Kind: kind, Channel: f.cfg.Channel,
		Members: slices.Clone(f.cfg.Members), Limits: f.cfg.Limits.wire(), Remain: remain, History: slices.Clone(p.history)})
	p.timeout = f.after(f.cfg.Limits.PhaseTimeout, "timeout")
	p.silence = f.after(f.cfg.Limits.SilenceTimeout, "silence")
	f.log.Info("realtime: phase open", "phase", id, "by", openedBy(opener))
}

func openedBy(m *protocol.Message) string {
	if m == nil {
		return "operator"
	}
	return m.Params.From
}

// after schedules a tick of the open phase.
func (f *Floor) after(d time.Duration, what string) clock.Timer {
	tick := f.phase.id + "/" + what
	return f.cfg.Clock.AfterFunc(d, func() { f.tick(tick, f.cfg.Clock.Now()) })
}

// tick queues a timer of the phase behind the events queued before it;
// when a flood of posts has filled the queue it waits in the mailbox
// instead, so a phase's timeout, silence or end of a voice is never lost.
func (f *Floor) tick(name string, at time.Time) {
	select {
	case f.events.C <- event{tick: name, at: at}:
	default:
		if !f.ctl.tick(name, at) {
			f.m.QueueDrops.WithLabelValues("realtime", "timer").Inc()
		}
	}
}

// until schedules a tick of the open phase at due; one already past is
// queued at once, stamped with due, behind the ticks that came before it.
func (f *Floor) until(due time.Time, what string) clock.Timer {
	if d := due.Sub(f.cfg.Clock.Now()); d > 0 {
		return f.after(d, what)
	}
	f.tick(f.phase.id+"/"+what, due)
	return nil
}

func (f *Floor) onTick(tick string, now time.Time) {
	p := f.phase
	if p == nil || !strings.HasPrefix(tick, p.id+"/") {
		return // a timer of a phase that ended
	}
	switch strings.TrimPrefix(tick, p.id+"/") {
	case "timeout":
		f.end(protocol.EndPhaseTimeout)
	case "silence":
		if p.busy != nil { // a robot still talks: that is no silence
			p.silence = f.until(now.Add(f.cfg.Limits.SilenceTimeout), "silence")
			return
		}
		if due := p.last.Add(f.cfg.Limits.SilenceTimeout); due.After(now) {
			p.silence = f.until(due, "silence") // an utterance came meanwhile
			return
		}
		f.end(protocol.EndSilenceTimeout)
	case "busy":
		if b := p.busy; b != nil && !now.Before(b.until) {
			f.release()
		}
	}
}

func (f *Floor) end(reason string) {
	p := f.phase
	if p == nil {
		return
	}
	f.stopTimers()
	f.phase = nil
	kind := protocol.PhaseTalk
	if f.cfg.Channel != "" {
		kind = protocol.PhaseWhisper
	}
	f.publishPhase(protocol.Phase{From: f.cfg.ID, Phase: p.id, Event: protocol.PhaseEnd, Kind: kind, Channel: f.cfg.Channel,
		Reason: reason, Limits: f.cfg.Limits.wire()})
	f.log.Info("realtime: phase ended", "phase", p.id, "reason", reason, "utterances", p.total)
}

func (f *Floor) stopTimers() {
	if p := f.phase; p != nil {
		for _, t := range []clock.Timer{p.timeout, p.silence} {
			if t != nil {
				t.Stop()
			}
		}
		if p.busy != nil && p.busy.timer != nil {
			p.busy.timer.Stop()
		}
	}
}

// onMessage opens a phase on a user's Message when none is open; during a
// phase a user's words join its history.
func (f *Floor) onMessage(m protocol.Message) {
	from := m.Params.From
	if f.members[from] || f.cfg.Room.Scheme.IsFloor(from) {
		return // a companion's or a broadcast
	}
	if f.phase == nil {
		f.open(&m)
		return
	}
	f.phase.history = appendTalk(f.phase.history, protocol.Talk{Idx: f.phase.idx, Agent: from, Text: m.Params.Message})
}

func appendTalk(h []protocol.Talk, t protocol.Talk) []protocol.Talk {
	h = append(h, t)
	if len(h) > HistoryKept {
		h = slices.Clone(h[len(h)-HistoryKept:])
	}
	return h
}

// onPost judges one post: every post gets an answer, and a copy (QoS 1
// delivers again) gets the same one.
func (f *Floor) onPost(post protocol.Post) {
	if a, ok := f.acks[post.ID]; ok && a.Phase == post.Phase {
		f.m.Duplicates.WithLabelValues("realtime", "post").Inc()
		f.answer(post.From, a)
		return
	}
	a := f.judge(post)
	f.acks[post.ID] = a
	f.order = append(f.order, post.ID)
	if len(f.order) > seenPosts {
		delete(f.acks, f.order[0])
		f.order = f.order[1:]
	}
	f.answer(post.From, a)
	if p := f.phase; p != nil && p.total >= f.cfg.Limits.PerDay {
		f.end(protocol.EndPerDay)
	}
}

func (f *Floor) judge(post protocol.Post) protocol.PostAck {
	a := protocol.PostAck{From: f.cfg.ID, Phase: post.Phase, PostID: post.ID}
	refuse := func(reason string) protocol.PostAck {
		a.Reason = reason
		f.m.RealtimeRejects.WithLabelValues(reason).Inc()
		return a
	}
	p := f.phase
	who := post.From
	if !f.members[who] {
		return refuse(protocol.RejectNotMember)
	}
	if p == nil || post.Phase != p.id {
		return refuse(protocol.RejectPhaseClosed)
	}
	a.Remaining = f.cfg.Limits.PerAgent - p.count[who]
	text := strings.TrimSpace(post.Text)
	if text == protocol.PostOver {
		p.over[who] = true
		a.Accepted, a.Reason = true, "over"
		f.checkAllOver()
		return a
	}
	now := f.cfg.Clock.Now()
	switch {
	case text == "" || text == protocol.TalkListen:
		return refuse(protocol.RejectEmpty)
	case p.count[who] >= f.cfg.Limits.PerAgent || p.total >= f.cfg.Limits.PerDay:
		return refuse(protocol.RejectQuotaExhausted)
	case !p.accepted[who].IsZero() && now.Sub(p.accepted[who]) < f.cfg.Limits.RateLimit:
		return refuse(protocol.RejectRateLimited)
	case !f.cfg.Limits.Overlap && f.busyWith() != nil:
		return refuse(protocol.RejectFloorBusy)
	}
	if utf8.RuneCountInString(text) > f.cfg.Limits.PerTalk {
		text = string([]rune(text)[:f.cfg.Limits.PerTalk])
		a.Reason = protocol.WarnTruncated
	}
	p.idx++
	p.count[who]++
	p.total++
	p.accepted[who], p.last = now, now
	p.over[who] = false // speaking again takes an Over back
	p.history = appendTalk(p.history, protocol.Talk{Idx: p.idx, Agent: who, Text: text})
	a.Accepted, a.Idx, a.Remaining = true, p.idx, f.cfg.Limits.PerAgent-p.count[who]
	m := protocol.NewMessage(protocol.NewID(), f.cfg.ID, nil, text, "")
	m.Params.Metadata[protocol.MetaPhase] = p.id
	m.Params.Metadata[protocol.MetaIdx] = p.idx
	m.Params.Metadata[protocol.MetaRemain] = a.Remaining
	m.Params.Metadata[protocol.MetaSpeaker] = who
	if f.cfg.Channel != "" {
		m.Params.Metadata[protocol.MetaChannel] = f.cfg.Channel
	}
	if err := f.cfg.Room.QueueBroadcast(f.out, f.cfg.Channel, m); err != nil {
		f.log.Error("realtime: broadcast not published", "idx", p.idx, "err", err)
	}
	f.m.RealtimeAccepted.Inc()
	if !f.cfg.Limits.Overlap {
		b := &busy{speaker: who, msgID: m.Params.ID, until: now.Add(StartGrace)}
		p.busy = b
		b.timer = f.after(StartGrace, "busy")
	}
	return a
}

func (f *Floor) answer(to string, a protocol.PostAck) {
	if err := f.cfg.Room.QueueAck(f.out, f.cfg.Channel, to, a); err != nil {
		f.log.Warn("realtime: answer not published", "to", to, "err", err)
	}
}

// checkAllOver ends the phase once every present member has said Over.
func (f *Floor) checkAllOver() {
	p := f.phase
	if p == nil {
		return
	}
	n := 0
	for id := range f.members {
		if !f.present[id] {
			continue // gone: it no longer counts
		}
		if !p.over[id] {
			return
		}
		n++
	}
	if n > 0 {
		f.end(protocol.EndAllOver)
	}
}

func (f *Floor) busyWith() *busy {
	if f.phase == nil {
		return nil
	}
	return f.phase.busy
}

func (f *Floor) release() {
	if p := f.phase; p != nil && p.busy != nil {
		if p.busy.timer != nil {
			p.busy.timer.Stop()
		}
		p.busy = nil
		// A robot talking is no silence: silence_timeout counts from the
		// end of the last voice, not from its acceptance (issue 18, item 9).
		if now := f.cfg.Clock.Now(); now.After(p.last) {
			p.last = now
		}
	}
}

// onVoice follows the accepted speaker's speaking status: its start
// bounds the hold by the announced duration, its end releases the floor.
func (f *Floor) onVoice(e room.SpeakingEvent) {
	b := f.busyWith()
	if b == nil || e.ID != b.speaker {
		return
	}
	switch {
	case e.Cleared || !e.Speaking.Speaking:
		f.release()
	default:
		d := time.Duration(e.Speaking.DurationMs)*time.Millisecond + protocol.VoiceMargin
		b.until = f.cfg.Clock.Now().Add(d)
		if b.timer != nil {
			b.timer.Stop()
		}
		b.timer = f.after(d, "busy")
	}
}

func (f *Floor) publishPhase(p protocol.Phase) {
	if err := f.cfg.Room.QueuePhase(f.out, f.cfg.Channel, p); err != nil {
		f.log.Error("realtime: phase event not published", "phase", p.Phase, "err", err)
	}
}
