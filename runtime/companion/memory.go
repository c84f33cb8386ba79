package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/seen"
)

// Memory (issue 29). A companion with a memory (Config.Memory) keeps
// what people say about themselves as facts, per person, on the robot:
//
//   - Recall: a person's message gives its brain input the pinned core
//     about that person, their facts most relevant to the message, and
//     the names of the other people in the conversation
//     (Input.Remembered) — never another person's other facts: what a
//     person told a robot is recalled only when they speak. A robot's
//     message recalls nothing. Whether this companion has answered the
//     speaker is Input.Events["already_replied"] (replied.go). Recall is
//     in memory and fast; nothing waits for the disk.
//   - Writing: what people said waits in a bounded list, and in the
//     store's journal on disk (memory.Journal, appended and fsynced on
//     Run's goroutine once each message's think has started; erased on
//     "forget me" and by the store's Forget and Wipe), until the conversation
//     rests (RestAfter without a message, or at shutdown); then one
//     extraction (the model's, under an hourly budget, or the rules')
//     runs on the memory's own goroutine, the facts are stored, and the
//     journal's lines taken out. What a kill -9 or a power cut left in
//     the journal is extracted at the next start. No fact is written
//     before a robot's first audio.
//   - Controls: "forget that", "forget me" and "what do you remember
//     about me" are the rules' (memory.Control), never the model's: the
//     companion answers them itself, with a vote the floor counts as
//     any other, and forgets at once. Every companion of the room hears
//     the person's Message, so a "forget me" reaches each of them, and
//     each one reports what it forgot (Memory.Forgot).

// Memory is how a companion remembers.
type Memory struct {
	Store *memory.Store
	// Recall is how many facts beside the pinned core a message recalls
	// (default 5).
	Recall int
	// RestAfter is the quiet after which what people said is written
	// (default 30 s).
	RestAfter time.Duration
	// Extractor is the model that extracts facts (nil: the rules);
	// PerHour bounds its calls (default 12), over which the rules extract.
	Extractor brain.Extractor
	PerHour   int
	// Embedder, when set, recalls by meaning: a message's embedding is
	// asked on its think's goroutine, within EmbedWait (default 500 ms;
	// over it, or failing, that message's recall stays lexical), and
	// each fact's when it is written.
	Embedder  memory.Embedder
	EmbedWait time.Duration
	// Share gives the facts this companion learns to the other companions
	// of its room, and keeps theirs (memory.share: the room shares
	// memory). Without it, each companion remembers what it was told.
	Share bool
	// Forgot is told, on the memory's goroutine, what a "forget me" or a
	// "forget that" erased (for the room: the companion's report); nil
	// tells nobody. It must not block.
	Forgot func(person, messageID string, n int)
}

const (
	maxPending     = memory.PendingLines // things said waiting to be written (as many as the journal keeps)
	memJobs        = 64                  // memory jobs queued
	extractTimeout = 60 * time.Second    // one model extraction
	// KnownMet is the event parameter the companion answers exactly: has
	// it answered the person before (aikyo's already_replied, replied.go).
	KnownMet = brain.EventAlreadyReplied
)

// remembering is the companion's memory book, owned by Run; the jobs run
// on the memory's goroutine (memLoop).
type remembering struct {
	pending []brain.Said
	rest    clockTimer
	touched map[string]bool // people this companion answered in this run (bounded; replied.go)
	calls   []time.Time     // the model's extraction calls in the last hour
	jobs    chan func(context.Context)
	log     []protocol.ForgetEntry // the "forget me"s this companion heard, newest last (its retained forget log)
	applied *seen.Set              // forget entries acted on, by message id
}

type clockTimer interface{ Stop() bool }

func (c *Companion) memOn() bool { return c.cfg.Memory != nil && c.cfg.Memory.Store != nil }

// memLoop runs the memory's jobs in order until ctx ends; what is queued
// then is dropped (the rules' last write ran in Run's stop).
func (c *Companion) memLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-c.mem.jobs:
			job(ctx)
		}
	}
}

// memJob queues a job for the memory's goroutine; the loop never waits
// for it (a full queue drops the job, counted).
func (c *Companion) memJob(kind string, job func(context.Context)) {
	select {
	case c.mem.jobs <- job:
	default:
		c.m.QueueDrops.WithLabelValues("memory", kind).Inc()
		c.log.Warn("memory: too much to write; a job is dropped", "job", kind)
	}
}

// isUser reports whether from is a person (not a companion of the room).
func (c *Companion) isUser(from string) bool { return from != c.me() && !c.cfg.Room.IsMember(from) }

// people are the persons in the conversation: the users in the history
// and the message's author, in order of their last word. Of the others
// than the author, a message recalls only the names.
func (c *Companion) people(m protocol.Message) []string {
	var out []string
	add := func(p string) {
		if c.isUser(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(m.Params.From)
	for i := len(c.history) - 1; i >= 0; i-- {
		add(c.history[i].Params.From)
	}
	return out
}

// recallN is how many facts a message recalls beside the pinned core.
func (c *Companion) recallN() int {
	if n := c.cfg.Memory.Recall; n > 0 {
		return n
	}
	return memory.DefaultRecall
}

// brainFacts are facts as a brain sees them.
func brainFacts(fs []memory.Fact) []brain.Fact {
	out := make([]brain.Fact, 0, len(fs))
	for _, f := range fs {
		out = append(out, brain.Fact{ID: f.ID, Person: f.Person, Key: f.Key, Text: f.Text, Pinned: f.Pinned})
	}
	return out
}

// recall fills in's memory: the facts recalled for m (its author's, and
// the names of the others in people).
func (c *Companion) recall(in *brain.Input, m protocol.Message, people []string) {
	st, p := c.cfg.Memory.Store, m.Params.From
	in.Remembered = c.withNames(st.Recall([]string{p}, m.Params.Message, c.recallN()), p, people)
}

// withNames is the brain's facts: the author's (recalled), then the name
// of each other person in people. Another person's other facts are
// theirs only: they are never recalled for someone else's message.
func (c *Companion) withNames(own []memory.Fact, author string, people []string) []brain.Fact {
	others := slices.DeleteFunc(slices.Clone(people), func(p string) bool { return p == author })
	return brainFacts(append(own, c.cfg.Memory.Store.Names(others)...))
}

// recallVec replaces in's lexical recall by one by meaning, when the
// memory has an embedder. It runs on the think's goroutine, bounded.
func (c *Companion) recallVec(ctx context.Context, in *brain.Input, people []string) {
	mc := c.cfg.Memory
	if !c.memOn() || mc.Embedder == nil || !c.isUser(in.Message.Params.From) {
		return
	}
	wait := mc.EmbedWait
	if wait <= 0 {
		wait = memory.DefaultEmbedWait
	}
	ectx, cancel := context.WithTimeout(ctx, wait)
	vs, err := mc.Embedder.Embed(ectx, []string{in.Message.Params.Message})
	cancel()
	if err != nil || len(vs) != 1 {
		c.m.BrainFailures.WithLabelValues("embed").Inc()
		c.log.Debug("memory: no embedding for the message; recall stays lexical", "err", err)
		return
	}
	p := in.Message.Params.From
	in.Remembered = c.withNames(mc.Store.RecallVec([]string{p}, vs[0], c.recallN()), p, people)
}

// heardPerson books what a person said for the next write and restarts
// the rest timer.
func (c *Companion) heardPerson(ctx context.Context, m protocol.Message) {
	p := m.Params.From
	if len(c.mem.pending) >= maxPending {
		c.mem.pending = c.mem.pending[1:]
		c.m.QueueDrops.WithLabelValues("memory", "pending").Inc()
	}
	c.mem.pending = append(c.mem.pending, brain.Said{Person: p, MessageID: m.Params.ID, Text: m.Params.Message})
	c.restLater(ctx)
}

// journal keeps what a person said (heardPerson) on disk until it is
// extracted: one small fsynced line, on Run's goroutine (never a bus
// handler's), after the message's think has started.
func (c *Companion) journal(m protocol.Message) {
	p := m.Params.From
	if err := c.cfg.Memory.Store.Journal().Append(memory.Heard{Person: p, MessageID: m.Params.ID, Text: m.Params.Message}); err != nil {
		c.log.Error("memory: what was said is not in the journal; a crash before the rest loses it", "person", p, "err", err)
	}
}

// memResume extracts what the journal kept from before the last stop (a
// kill -9, a power cut, an extraction cut short), at once.
func (c *Companion) memResume() {
	heard := c.cfg.Memory.Store.Journal().Pending()
	if len(heard) == 0 {
		return
	}
	for _, h := range heard {
		c.mem.pending = append(c.mem.pending, brain.Said{Person: h.Person, MessageID: h.MessageID, Text: h.Text})
	}
	c.log.Info("memory: extracting what was said before the last stop", "said", len(heard))
	c.onRest()
}

// restLater (re)starts the quiet after which the conversation rests.
func (c *Companion) restLater(ctx context.Context) {
	if c.mem.rest != nil {
		c.mem.rest.Stop()
	}
	after := c.cfg.Memory.RestAfter
	if after <= 0 {
		after = memory.DefaultRestAfter
	}
	c.mem.rest = c.cfg.Clock.AfterFunc(after, func() { c.deliver(ctx, event{kind: evRest}) })
}

// onRest writes what people said since the last write: one extraction on
// the memory's goroutine.
func (c *Companion) onRest() {
	if len(c.mem.pending) == 0 {
		return
	}
	said := c.mem.pending
	c.mem.pending = nil
	model := c.cfg.Memory.Extractor
	if model != nil && !c.budget() {
		c.log.Info("memory: the model's extraction budget for this hour is spent; the rules extract")
		model = nil
	}
	c.memJob("write", func(ctx context.Context) { c.write(ctx, said, model) })
}

// budget reports whether the model may extract now, and counts the call.
func (c *Companion) budget() bool {
	per := c.cfg.Memory.PerHour
	if per <= 0 {
		per = memory.DefaultPerHour
	}
	now := c.cfg.Clock.Now()
	c.mem.calls = slices.DeleteFunc(c.mem.calls, func(t time.Time) bool { return now.Sub(t) >= time.Hour })
	if len(c.mem.calls) >= per {
		return false
	}
	c.mem.calls = append(c.mem.calls, now)
	return true
}

// write extracts facts from said (with model, or the rules when it is
// nil or fails) and stores them. Runs on the memory's goroutine.
func (c *Companion) write(ctx context.Context, said []brain.Said, model brain.Extractor) {
	st := c.cfg.Memory.Store
	var facts []memory.Fact
	if model != nil {
		people := map[string]bool{}
		for _, s := range said {
			people[s.Person] = true
		}
		var known []brain.Fact
		for p := range people {
			known = append(known, brainFacts(st.Facts(p))...)
		}
		xctx, cancel := context.WithTimeout(ctx, extractTimeout)
		learned, err := model.Extract(xctx, brain.ExtractInput{Card: c.cfg.Card, Known: known, Said: said})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.m.BrainFailures.WithLabelValues("extract").Inc()
			c.log.Warn("memory: the model did not extract; the rules do", "err", err)
			model = nil
		} else {
			facts = c.learnedFacts(learned, said)
		}
	}
	if model == nil {
		facts = ruleFacts(said)
	}
	// A person forgotten since (an operator's forget, a wipe: the store's,
	// not this loop's) has their words erased from the journal: what was
	// learned from them is dropped too.
	facts = slices.DeleteFunc(facts, func(f memory.Fact) bool { return st.Journal().Erased(f.MessageID) })
	if len(facts) == 0 {
		c.log.Info("memory: nothing to remember in what was said", "said", len(said), "by", map[bool]string{true: "model", false: "rules"}[model != nil])
		c.extracted(said)
		return
	}
	if e := c.cfg.Memory.Embedder; e != nil {
		ectx, cancel := context.WithTimeout(ctx, extractTimeout)
		if err := memory.EmbedFacts(ectx, e, facts); err != nil {
			c.log.Warn("memory: no embeddings for the facts; they are recalled by their words", "err", err)
		}
		cancel()
	}
	stored, err := st.Add(facts...)
	if err != nil {
		c.log.Error("memory: facts not written; what was said stays in the journal for the next start", "facts", len(facts), "err", err)
		return
	}
	c.log.Info("memory: written", "facts", len(stored), "said", len(said))
	c.extracted(said)
	if c.cfg.Memory.Share {
		c.share(ctx, stored)
	}
}

// extracted takes what said was out of the journal, its facts written.
func (c *Companion) extracted(said []brain.Said) {
	ids := make([]string, 0, len(said))
	for _, s := range said {
		ids = append(ids, s.MessageID)
	}
	if err := c.cfg.Memory.Store.Journal().Remove(ids...); err != nil {
		c.log.Error("memory: extracted lines stay in the journal; the next start extracts them again", "said", len(said), "err", err)
	}
}

// learnedFacts keeps what a model extracted that belongs to whoever said
// it and that the memory's check takes (memory.Check, the rules' own: a
// name is a name, no fact reads as an instruction; the key normalised):
// a fact credited to someone who did not say its message is dropped (two
// people's facts never mix), one the check refuses is counted
// (chorus_brain_failures_total{reason="bad_fact"}) and logged at debug.
func (c *Companion) learnedFacts(learned []brain.Learned, said []brain.Said) []memory.Fact {
	by := map[string]string{} // message id -> its speaker
	for _, s := range said {
		by[s.MessageID] = s.Person
	}
	var out []memory.Fact
	for _, l := range learned {
		if by[l.MessageID] == "" || by[l.MessageID] != l.Person {
			continue
		}
		key, text, err := memory.Check(l.Key, l.Text)
		if err != nil {
			c.m.BrainFailures.WithLabelValues("bad_fact").Inc()
			c.log.Debug("memory: a fact the model extracted is refused", "person", l.Person, "key", key, "reason", err)
			continue
		}
		out = append(out, memory.Fact{Person: l.Person, Key: key, Text: text, MessageID: l.MessageID,
			Supersedes: l.Supersedes, Pinned: key == "name"})
	}
	return out
}

// share tells the room's other companions what this one learned, in
// reports of at most protocol.MaxSharedFacts. Runs on the memory's
// goroutine.
func (c *Companion) share(ctx context.Context, facts []memory.Fact) {
	for len(facts) > 0 {
		n := min(len(facts), protocol.MaxSharedFacts)
		s := protocol.Shared{From: c.me(), ID: protocol.NewID()}
		for _, f := range facts[:n] {
			s.Facts = append(s.Facts, protocol.MemoryFact{ID: f.ID, Person: f.Person, Key: f.Key, Text: f.Text, Created: f.Created,
				Robot: f.Robot, MessageID: f.MessageID, Pinned: f.Pinned, Supersedes: f.Supersedes})
		}
		facts = facts[n:]
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := c.cfg.Room.SendShared(pctx, s); err != nil {
			c.log.Warn("memory: the room was not told what was learned", "facts", len(s.Facts), "err", err)
		}
		cancel()
	}
}

// onShared keeps what another companion of the room learned, on the
// memory's goroutine (the store skips a fact it has: a report seen twice
// adds nothing).
func (c *Companion) onShared(s protocol.Shared) {
	if s.From == c.me() || !c.memOn() || !c.cfg.Memory.Share {
		return
	}
	facts := make([]memory.Fact, 0, len(s.Facts))
	for _, f := range s.Facts {
		facts = append(facts, memory.Fact{ID: f.ID, Person: f.Person, Key: f.Key, Text: f.Text, MessageID: f.MessageID,
			Robot: s.From, Created: f.Created, Pinned: f.Pinned, Supersedes: f.Supersedes})
	}
	st := c.cfg.Memory.Store
	c.memJob("shared", func(context.Context) {
		if stored, err := st.Add(facts...); err != nil {
			c.log.Error("memory: shared facts not written", "from", s.From, "err", err)
		} else if len(stored) > 0 {
			c.log.Info("memory: kept what another companion learned", "from", s.From, "facts", len(stored))
		}
	})
}

// ruleFacts are the rules' statements in what people said.
func ruleFacts(said []brain.Said) []memory.Fact {
	var out []memory.Fact
	for _, s := range said {
		for _, st := range memory.Extract(s.Text) {
			out = append(out, memory.Fact{Person: s.Person, Key: st.Key, Text: st.Text, MessageID: s.MessageID, Pinned: st.Pinned})
		}
	}
	return out
}

// control answers a person's memory command by the rules; it reports
// false when m is none.
func (c *Companion) control(ctx context.Context, m protocol.Message, e event) bool {
	cmd := memory.Control(m.Params.Message)
	if cmd == memory.None {
		return false
	}
	p, lang, st := m.Params.From, c.cfg.Card.Language, c.cfg.Memory.Store
	var text string
	switch cmd {
	case memory.Recall:
		facts := st.Facts(p)
		// What was said in this conversation is not written yet: the
		// rules' reading of it is part of the answer (newest wins by key).
		for _, f := range ruleFacts(c.pendingOf(p)) {
			facts = slices.DeleteFunc(facts, func(old memory.Fact) bool { return f.Key != "" && old.Key == f.Key })
			facts = append(facts, f)
		}
		text = memory.Describe(lang, facts)
	case memory.ForgetMe:
		c.mem.pending = slices.DeleteFunc(c.mem.pending, func(s brain.Said) bool { return s.Person == p })
		// At once, not only in the forget job: a crash before it runs must
		// not leave the person's words to be extracted at the next start.
		if err := st.Journal().Forget(p); err != nil {
			c.log.Error("memory: \"forget me\" did not reach the journal now; the forget job tries again", "person", p, "err", err)
		}
		delete(c.mem.touched, p)
		text = memory.Acknowledge(lang, cmd, 0)
		c.logForget(protocol.ForgetEntry{Person: p, At: c.cfg.Clock.Now(), MessageID: m.Params.ID})
		c.memJob("forget", func(context.Context) { c.forget(p, m.Params.ID, 0) })
	case memory.ForgetThat:
		text = memory.Acknowledge(lang, cmd, 1)
		if i := lastBy(c.mem.pending, p); i >= 0 {
			id := c.mem.pending[i].MessageID
			c.mem.pending = slices.Delete(c.mem.pending, i, i+1) // not written yet: never will be
			if err := st.Journal().Remove(id); err != nil {
				c.log.Error("memory: \"forget that\" did not reach the journal", "person", p, "err", err)
			}
			break
		}
		c.memJob("forget", func(context.Context) { c.forget(p, m.Params.ID, 0, newest(st.Facts(p))...) })
	}
	c.log.Info("memory: a person's command, answered by the rules", "person", p, "command", cmd)
	e.kind = evThought
	e.thought = brain.Thought{State: protocol.Speak, Importance: 9, Selected: true, Closing: protocol.ClosingNone,
		Draft: text, Emotion: protocol.EmotionNeutral, To: []string{p}}
	e.words = nil
	c.vote(ctx, e, false)
	tf := c.thoughts[m.Params.ID]
	tf.ruled = true
	c.thoughts[m.Params.ID] = tf
	return true
}

// lastBy is the index of the last thing p said in said, or -1.
func lastBy(said []brain.Said, p string) int {
	for i := len(said) - 1; i >= 0; i-- {
		if said[i].Person == p {
			return i
		}
	}
	return -1
}

// pendingOf is what p said that is not written yet.
func (c *Companion) pendingOf(p string) []brain.Said {
	var out []brain.Said
	for _, s := range c.mem.pending {
		if s.Person == p {
			out = append(out, s)
		}
	}
	return out
}

// newest is the id of the newest of facts (none when there is none).
func newest(facts []memory.Fact) []string {
	if len(facts) == 0 {
		return nil
	}
	return []string{facts[len(facts)-1].ID}
}

// forgetRetries bounds how often a forget that failed (a full disk) is
// tried again, forgetRetry apart.
const (
	forgetRetries = 10
	forgetRetry   = 30 * time.Second
)

// forget erases p's facts (ids; all of them when none) from the store and
// reports it; one that fails is tried again later (attempt counts). Runs
// on the memory's goroutine.
func (c *Companion) forget(p, messageID string, attempt int, ids ...string) {
	n, err := c.cfg.Memory.Store.Forget(p, ids...)
	if err != nil {
		c.m.BrainFailures.WithLabelValues("forget").Inc()
		if attempt+1 >= forgetRetries {
			c.log.Error("memory: not forgotten, and no more tries; a restart tries again from the room's forget logs", "person", p, "err", err)
			return
		}
		c.log.Error("memory: not forgotten; trying again", "person", p, "in", forgetRetry, "err", err)
		c.cfg.Clock.AfterFunc(forgetRetry, func() {
			c.memJob("forget", func(context.Context) { c.forget(p, messageID, attempt+1, ids...) })
		})
		return
	}
	c.log.Info("memory: forgotten", "person", p, "facts", n)
	if f := c.cfg.Memory.Forgot; f != nil {
		f(p, messageID, n)
	}
}

// logForget adds e to this companion's forget log and publishes it
// (retained): a companion of the room that was away reads it when it
// comes back.
func (c *Companion) logForget(e protocol.ForgetEntry) {
	c.mem.applied.Add(e.MessageID)
	c.mem.log = append(c.mem.log, e)
	if len(c.mem.log) > protocol.MaxForgets {
		c.mem.log = slices.Clone(c.mem.log[len(c.mem.log)-protocol.MaxForgets:])
	}
	c.republishForgets()
}

// republishForgets publishes the forget log again (after a reconnect).
func (c *Companion) republishForgets() {
	if len(c.mem.log) == 0 {
		return
	}
	l := protocol.ForgetLog{From: c.me(), Forgets: slices.Clone(c.mem.log)}
	if err := c.cfg.Room.QueueForgets(c.out, l); err != nil {
		c.log.Warn("memory: the forget log was not published again", "err", err)
	}
}

// onForgets acts on a member's forget log: each "forget me" not acted on
// yet forgets what this companion learned about that person before it
// was asked (what it learned since stays). Its own log, read back after
// a restart, is adopted, and acted on again: a forget that failed before
// the restart is tried once more.
func (c *Companion) onForgets(l protocol.ForgetLog) {
	if l.From == c.me() {
		for _, e := range l.Forgets {
			if !slices.ContainsFunc(c.mem.log, func(o protocol.ForgetEntry) bool { return o.MessageID == e.MessageID }) {
				c.mem.log = append(c.mem.log, e)
			}
		}
		slices.SortFunc(c.mem.log, func(a, b protocol.ForgetEntry) int { return a.At.Compare(b.At) })
		if len(c.mem.log) > protocol.MaxForgets {
			c.mem.log = slices.Clone(c.mem.log[len(c.mem.log)-protocol.MaxForgets:])
		}
	}
	st := c.cfg.Memory.Store
	for _, e := range l.Forgets {
		if !c.mem.applied.Add(e.MessageID) {
			continue
		}
		c.memJob("forget", func(context.Context) {
			var ids []string
			facts := st.Facts(e.Person)
			for _, f := range facts {
				if f.Created.Before(e.At) {
					ids = append(ids, f.ID)
				}
			}
			switch {
			case len(ids) == len(facts) && (len(facts) > 0 || st.Met(e.Person)):
				c.forget(e.Person, e.MessageID, 0) // everything, the meeting too
			case len(ids) > 0:
				c.forget(e.Person, e.MessageID, 0, ids...)
			}
		})
	}
}

// memStop writes, by the rules, what people said that is not written yet
// when the companion stops (a model is not asked on the way out).
func (c *Companion) memStop() {
	if !c.memOn() || len(c.mem.pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.write(ctx, c.mem.pending, nil)
	c.mem.pending = nil
}

// knowledge are the tools the card allows its model beside actions:
// the companions present, the date and time, memory search about the
// message's author, and the tools the body declares (Config.Knowledge).
//
// The rule for a body's tools: one is offered when the card's knowledge
// list names it or names the word "body" (brain.KnowBody), and never when
// its name is a built-in tool's (companions_present, date_time,
// memory_search, whether or not the card lists them) or one of the body's
// actions (acts): those are said in the log once per name. Its call asks
// the body (Device) a knowledge query, bounded by the brain's context,
// and answers the result's text.
func (c *Companion) knowledge(m protocol.Message, acts []protocol.ActionDef) []brain.Knowledge {
	allowed := c.cfg.Card.Knowledge
	if len(allowed) == 0 {
		return nil
	}
	var out []brain.Knowledge
	present := c.presentList()
	clk := c.cfg.Clock
	for _, name := range allowed {
		switch name {
		case KnowCompanions:
			out = append(out, brain.Knowledge{Name: name, Description: "The companions present in the room now (their ids).",
				Call: func(context.Context, json.RawMessage) (string, error) {
					b, _ := json.Marshal(present)
					return string(b), nil
				}})
		case KnowDateTime:
			out = append(out, brain.Knowledge{Name: name, Description: "The date, the day of the week and the time here.",
				Call: func(context.Context, json.RawMessage) (string, error) {
					return clk.Now().Format("Monday 2 January 2006, 15:04 MST"), nil
				}})
		case KnowMemory:
			if !c.memOn() || !c.isUser(m.Params.From) {
				continue
			}
			st, p := c.cfg.Memory.Store, m.Params.From
			out = append(out, brain.Knowledge{Name: name,
				Description: "Search what you remember about the person you are answering. Argument: query, a few words.",
				Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
				Call: func(_ context.Context, args json.RawMessage) (string, error) {
					var q struct {
						Query string `json:"query"`
					}
					if err := json.Unmarshal(args, &q); err != nil {
						return "", fmt.Errorf("memory_search: the arguments must be {\"query\": text}: %w", err)
					}
					var lines []string
					for _, f := range st.Search(p, q.Query, 5) {
						b, _ := json.Marshal(map[string]string{"person": f.Person, "text": f.Text})
						lines = append(lines, string(b))
					}
					if len(lines) == 0 {
						return "nothing remembered", nil
					}
					return strings.Join(lines, "\n"), nil
				}})
		}
	}
	return append(out, c.bodyKnowledge(acts)...)
}

// bodyKnowledge are the knowledge tools the body declares that the card
// allows (the rule is knowledge's).
func (c *Companion) bodyKnowledge(acts []protocol.ActionDef) []brain.Knowledge {
	if c.cfg.Knowledge == nil || c.cfg.Device == "" {
		return nil
	}
	card := c.cfg.Card
	var out []brain.Knowledge
	for _, d := range c.cfg.Knowledge() {
		k := brain.Knowledge{Name: d.Name, Description: d.Description, Parameters: d.Parameters, FromBody: true}
		if !card.AllowsKnowledge(k) {
			continue
		}
		builtin := slices.ContainsFunc(BuiltinKnowledge, func(n string) bool { return strings.EqualFold(n, d.Name) })
		action := slices.ContainsFunc(acts, func(a protocol.ActionDef) bool { return strings.EqualFold(a.Name, d.Name) })
		if builtin || action {
			if _, told := c.knowClash.LoadOrStore(d.Name, true); !told {
				c.log.Warn("the body declared a knowledge tool with the name of a built-in tool or an action; not offered", "tool", d.Name, "body", c.cfg.Device)
			}
			continue
		}
		dev, asker, name := c.cfg.Device, c.cfg.Queries, d.Name
		k.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
			res, err := query.Know(ctx, asker, dev, protocol.KnowledgeRequest{Name: name, Args: args}, 0)
			if err != nil {
				return "", fmt.Errorf("knowledge %s of body %s: %w", name, dev, err)
			}
			return res.Text, nil
		}
		out = append(out, k)
	}
	return out
}

// Knowledge tool names a card may list (companion.knowledge).
const (
	KnowCompanions = "companions_present"
	KnowDateTime   = "date_time"
	KnowMemory     = "memory_search"
)

// BuiltinKnowledge are the knowledge tools the companion answers itself;
// a card may also list brain.KnowBody or a tool its body declares.
var BuiltinKnowledge = []string{KnowCompanions, KnowDateTime, KnowMemory}
