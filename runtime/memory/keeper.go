// The keeper: a companion's memory policy (issue 40, item 1a).

package memory

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/seen"
)

// A Keeper is a companion's memory policy over its Store (docs/memory.md):
//
//   - Heard books what a person said for the next write (a bounded list,
//     and the store's journal on disk with Journal) and restarts the
//     quiet after which the conversation rests.
//   - Recall gives a message the speaker's facts and only the names of
//     the others present; RecallByMeaning does so by an Embedder.
//   - Rest hands what was heard to one extraction (the Extractor's,
//     under an hourly budget, or the rules') on the keeper's goroutine,
//     which writes the facts, takes the journal's lines out and shares
//     the facts with the room.
//   - Answer answers a person's memory command ("forget that", "forget
//     me", "what do you remember about me") by the rules and forgets at
//     once; Forget acts on a companion's forget log.
//   - Shared keeps what another companion of the room learned.
//
// # Concurrency
//
// Heard, Journal, Resume, Recall, Rest, Answer, Forget, Republish, Touch and
// Stop are the companion loop's: call them from one goroutine. Run is the
// keeper's own goroutine, where what touches the disk or the network
// runs in order (jobs); nothing else waits for it, and a full queue drops
// a job, counted. RecallByMeaning, Shared and Touched are safe from any
// goroutine (Shared only queues).
type Keeper struct {
	cfg KeeperConfig

	// owned by the loop
	pending []Heard
	rest    clock.Timer
	calls   []time.Time            // the Extractor's calls in the last hour
	log     []protocol.ForgetEntry // the "forget me"s this companion heard, newest last (its retained forget log)
	applied *seen.Set              // forget entries acted on, by message id

	jobs chan func(context.Context)
}

// KeeperConfig is what a Keeper keeps and tells.
type KeeperConfig struct {
	Store *Store
	Me    string // the companion's id
	// Recall is how many facts beside the pinned core a message recalls
	// (default DefaultRecall).
	Recall int
	// RestAfter is the quiet after which what people said is written
	// (default DefaultRestAfter).
	RestAfter time.Duration
	// Extractor extracts facts (nil: the rules); PerHour bounds its calls
	// (default DefaultPerHour), over which the rules extract.
	Extractor Extractor
	PerHour   int
	// Embedder, when set, recalls by meaning (RecallByMeaning, within
	// EmbedWait, default DefaultEmbedWait) and embeds each fact written.
	Embedder  Embedder
	EmbedWait time.Duration
	// Share gives what this companion learns to the room (Room.Share) and
	// keeps what the others learn (Shared).
	Share bool
	// Room is what the keeper tells the other companions.
	Room Room
	// Quiet is called, on a clock's goroutine, when the conversation has
	// rested for RestAfter since Heard (with Heard's ctx); the companion
	// calls Rest on its loop. It must not block past ctx.
	Quiet func(ctx context.Context)
	// Forgot is told, on the keeper's goroutine, what a "forget me" or a
	// "forget that" erased; nil tells nobody. It must not block.
	Forgot func(person, messageID string, n int)
	// Voices are the robot's voiceprints, when it identifies voices: a
	// "forget me", this companion's or the room's, erases the person's
	// voiceprint made before it with their facts.
	Voices  *Voices
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// Extractor extracts facts about people from what they said, in one
// call: each fact is credited to a person and one of their messages in
// said; known are the facts already kept about them (a new fact's
// Supersedes names one it replaces). The keeper checks what it returns.
type Extractor interface {
	Extract(ctx context.Context, known []Fact, said []Heard) ([]Fact, error)
}

// Room is what a keeper tells the other companions of its room.
type Room interface {
	// Share publishes what this companion learned; on the keeper's
	// goroutine, bounded by ctx.
	Share(ctx context.Context, s protocol.Shared) error
	// Forgets publishes the companion's forget log (retained); on the
	// loop: it must not block.
	Forgets(l protocol.ForgetLog) error
}

const (
	keeperJobs     = 64               // jobs queued
	keeperApplied  = 512              // forget entries remembered as acted on
	extractTimeout = 60 * time.Second // one extraction
	shareTimeout   = 10 * time.Second // one Shared report
	stopTimeout    = 2 * time.Second  // the rules' last write
	// forgetRetries bounds how often a forget that failed (a full disk)
	// is tried again, forgetRetry apart.
	forgetRetries = 10
	forgetRetry   = 30 * time.Second
)

// NewKeeper makes a keeper; Run runs its jobs. Clock, Log and Metrics
// default to the real clock, slog's default and new metrics.
func NewKeeper(cfg KeeperConfig) *Keeper {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.Metrics = metrics.OrNew(cfg.Metrics)
	return &Keeper{cfg: cfg, applied: seen.New(keeperApplied), jobs: make(chan func(context.Context), keeperJobs)}
}

// Run runs the keeper's jobs in order until ctx ends; what is queued
// then is dropped (Stop writes what was heard by the rules).
func (k *Keeper) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-k.jobs:
			job(ctx)
		}
	}
}

// job queues a job for Run; the caller never waits for it (a full queue
// drops the job, counted).
func (k *Keeper) job(kind string, job func(context.Context)) {
	select {
	case k.jobs <- job:
	default:
		k.cfg.Metrics.QueueDrops.WithLabelValues("memory", kind).Inc()
		k.cfg.Log.Warn("memory: too much to write; a job is dropped", "job", kind)
	}
}

// Heard books what a person said for the next write and restarts the
// quiet after which the conversation rests (Quiet, with ctx).
func (k *Keeper) Heard(ctx context.Context, h Heard) {
	if len(k.pending) >= PendingLines {
		k.pending = k.pending[1:]
		k.cfg.Metrics.QueueDrops.WithLabelValues("memory", "pending").Inc()
	}
	k.pending = append(k.pending, h)
	if k.rest != nil {
		k.rest.Stop()
	}
	after := k.cfg.RestAfter
	if after <= 0 {
		after = DefaultRestAfter
	}
	k.rest = k.cfg.Clock.AfterFunc(after, func() {
		if k.cfg.Quiet != nil {
			k.cfg.Quiet(ctx)
		}
	})
}

// Journal keeps what a person said (Heard) on disk until it is
// extracted: one small fsynced line, on the caller's goroutine (the
// loop's, once the message's think has started: never a bus handler's).
func (k *Keeper) Journal(h Heard) {
	if err := k.cfg.Store.Journal().Append(h); err != nil {
		k.cfg.Log.Error("memory: what was said is not in the journal; a crash before the rest loses it", "person", h.Person, "err", err)
	}
}

// Resume extracts what the journal kept from before the last stop (a
// kill -9, a power cut, an extraction cut short), at once.
func (k *Keeper) Resume() {
	heard := k.cfg.Store.Journal().Pending()
	if len(heard) == 0 {
		return
	}
	k.pending = append(k.pending, heard...)
	k.cfg.Log.Info("memory: extracting what was said before the last stop", "said", len(heard))
	k.Rest()
}

// recallN is how many facts a message recalls beside the pinned core.
func (k *Keeper) recallN() int {
	if n := k.cfg.Recall; n > 0 {
		return n
	}
	return DefaultRecall
}

// Recall is what a message of author recalls: the author's pinned core
// and facts most relevant to message, then the name of each other person
// in people. Another person's other facts are theirs only: they are
// never recalled for someone else's message. In memory and fast.
func (k *Keeper) Recall(author, message string, people []string) []Fact {
	return k.withNames(k.cfg.Store.Recall([]string{author}, message, k.recallN()), author, people)
}

// Knows reports whether the memory holds anything of person: facts, or
// words not written yet. On the companion's loop.
func (k *Keeper) Knows(person string) bool {
	return len(k.cfg.Store.Facts(person)) > 0 || len(k.pendingOf(person)) > 0
}

// RecallByMeaning is Recall by the Embedder's embedding of message,
// asked within EmbedWait; false without an embedder, or when the
// embedding fails or is late (the caller keeps Recall's).
func (k *Keeper) RecallByMeaning(ctx context.Context, author, message string, people []string) ([]Fact, bool) {
	if k.cfg.Embedder == nil {
		return nil, false
	}
	wait := k.cfg.EmbedWait
	if wait <= 0 {
		wait = DefaultEmbedWait
	}
	ectx, cancel := context.WithTimeout(ctx, wait)
	vs, err := k.cfg.Embedder.Embed(ectx, []string{message})
	cancel()
	if err != nil || len(vs) != 1 {
		k.cfg.Metrics.BrainFailures.WithLabelValues("embed").Inc()
		k.cfg.Log.Debug("memory: no embedding for the message; recall stays lexical", "err", err)
		return nil, false
	}
	return k.withNames(k.cfg.Store.RecallVec([]string{author}, vs[0], k.recallN()), author, people), true
}

// withNames is own, then the name of each other person in people.
func (k *Keeper) withNames(own []Fact, author string, people []string) []Fact {
	others := slices.DeleteFunc(slices.Clone(people), func(p string) bool { return p == author })
	return append(own, k.cfg.Store.Names(others)...)
}

// Rest writes what people said since the last write: one extraction on
// the keeper's goroutine.
func (k *Keeper) Rest() {
	if len(k.pending) == 0 {
		return
	}
	said := k.pending
	k.pending = nil
	model := k.cfg.Extractor
	if model != nil && !k.budget() {
		k.cfg.Log.Info("memory: the model's extraction budget for this hour is spent; the rules extract")
		model = nil
	}
	k.job("write", func(ctx context.Context) { k.write(ctx, said, model) })
}

// Stop writes, by the rules, what people said that is not written yet
// when the companion stops (a model is not asked on the way out).
func (k *Keeper) Stop() {
	if len(k.pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	k.write(ctx, k.pending, nil)
	k.pending = nil
}

// budget reports whether the Extractor may extract now, and counts the
// call.
func (k *Keeper) budget() bool {
	per := k.cfg.PerHour
	if per <= 0 {
		per = DefaultPerHour
	}
	now := k.cfg.Clock.Now()
	k.calls = slices.DeleteFunc(k.calls, func(t time.Time) bool { return now.Sub(t) >= time.Hour })
	if len(k.calls) >= per {
		return false
	}
	k.calls = append(k.calls, now)
	return true
}

// write extracts facts from said (with model, or the rules when it is
// nil or fails) and stores them. Runs on the keeper's goroutine (or
// Stop's).
func (k *Keeper) write(ctx context.Context, said []Heard, model Extractor) {
	st, log := k.cfg.Store, k.cfg.Log
	var facts []Fact
	if model != nil {
		people := map[string]bool{}
		for _, s := range said {
			people[s.Person] = true
		}
		var known []Fact
		for p := range people {
			known = append(known, st.Facts(p)...)
		}
		xctx, cancel := context.WithTimeout(ctx, extractTimeout)
		learned, err := model.Extract(xctx, known, said)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			k.cfg.Metrics.BrainFailures.WithLabelValues("extract").Inc()
			log.Warn("memory: the model did not extract; the rules do", "err", err)
			model = nil
		} else {
			facts = k.learnedFacts(learned, said)
		}
	}
	if model == nil {
		facts = ruleFacts(said)
	}
	// A person forgotten since (an operator's forget, a wipe: the store's,
	// not this keeper's) has their words erased from the journal: what was
	// learned from them is dropped too.
	facts = slices.DeleteFunc(facts, func(f Fact) bool { return st.Journal().Erased(f.MessageID) })
	if len(facts) == 0 {
		log.Info("memory: nothing to remember in what was said", "said", len(said), "by", map[bool]string{true: "model", false: "rules"}[model != nil])
		k.extracted(said)
		return
	}
	if e := k.cfg.Embedder; e != nil {
		ectx, cancel := context.WithTimeout(ctx, extractTimeout)
		if err := EmbedFacts(ectx, e, facts); err != nil {
			log.Warn("memory: no embeddings for the facts; they are recalled by their words", "err", err)
		}
		cancel()
	}
	stored, err := st.Add(facts...)
	if err != nil {
		log.Error("memory: facts not written; what was said stays in the journal for the next start", "facts", len(facts), "err", err)
		return
	}
	log.Info("memory: written", "facts", len(stored), "said", len(said))
	k.extracted(said)
	if k.cfg.Share {
		k.share(ctx, stored)
	}
}

// extracted takes what said was out of the journal, its facts written.
func (k *Keeper) extracted(said []Heard) {
	ids := make([]string, 0, len(said))
	for _, s := range said {
		ids = append(ids, s.MessageID)
	}
	if err := k.cfg.Store.Journal().Remove(ids...); err != nil {
		k.cfg.Log.Error("memory: extracted lines stay in the journal; the next start extracts them again", "said", len(said), "err", err)
	}
}

// learnedFacts keeps what a model extracted that belongs to whoever said
// it and that Check takes (the rules' own: a name is a name, no fact
// reads as an instruction; the key normalised): a fact credited to
// someone who did not say its message is dropped (two people's facts
// never mix), one the check refuses is counted
// (chorus_brain_failures_total{reason="bad_fact"}) and logged at debug.
// Only a learned fact's person, message, key, text and supersedes count.
func (k *Keeper) learnedFacts(learned []Fact, said []Heard) []Fact {
	by := map[string]string{} // message id -> its speaker
	for _, s := range said {
		by[s.MessageID] = s.Person
	}
	var out []Fact
	for _, l := range learned {
		if by[l.MessageID] == "" || by[l.MessageID] != l.Person {
			continue
		}
		key, text, err := Check(l.Key, l.Text)
		if err != nil {
			k.cfg.Metrics.BrainFailures.WithLabelValues("bad_fact").Inc()
			k.cfg.Log.Debug("memory: a fact the model extracted is refused", "person", l.Person, "key", key, "reason", err)
			continue
		}
		out = append(out, Fact{Person: l.Person, Key: key, Text: text, MessageID: l.MessageID,
			Supersedes: l.Supersedes, Pinned: key == keyName})
	}
	return out
}

// ruleFacts are the rules' statements in what people said.
func ruleFacts(said []Heard) []Fact {
	var out []Fact
	for _, s := range said {
		for _, st := range Extract(s.Text) {
			out = append(out, Fact{Person: s.Person, Key: st.Key, Text: st.Text, MessageID: s.MessageID, Pinned: st.Pinned})
		}
	}
	return out
}

// share tells the room's other companions what this one learned, in
// reports of at most protocol.MaxSharedFacts. Runs on the keeper's
// goroutine.
func (k *Keeper) share(ctx context.Context, facts []Fact) {
	for len(facts) > 0 {
		n := min(len(facts), protocol.MaxSharedFacts)
		s := protocol.Shared{From: k.cfg.Me, ID: protocol.NewID()}
		for _, f := range facts[:n] {
			s.Facts = append(s.Facts, f.Wire())
		}
		facts = facts[n:]
		pctx, cancel := context.WithTimeout(ctx, shareTimeout)
		if err := k.cfg.Room.Share(pctx, s); err != nil {
			k.cfg.Log.Warn("memory: the room was not told what was learned", "facts", len(s.Facts), "err", err)
		}
		cancel()
	}
}

// Shared keeps what another companion of the room learned, on the
// keeper's goroutine (the store skips a fact it has: a report seen twice
// adds nothing); nothing without Share, or from this companion. Safe
// from any goroutine: it only queues.
func (k *Keeper) Shared(s protocol.Shared) {
	if s.From == k.cfg.Me || !k.cfg.Share {
		return
	}
	facts := make([]Fact, 0, len(s.Facts))
	for _, f := range s.Facts {
		facts = append(facts, FromWire(f, s.From))
	}
	k.job("shared", func(context.Context) {
		if stored, err := k.cfg.Store.Add(facts...); err != nil {
			k.cfg.Log.Error("memory: shared facts not written", "from", s.From, "err", err)
		} else if len(stored) > 0 {
			k.cfg.Log.Info("memory: kept what another companion learned", "from", s.From, "facts", len(stored))
		}
	})
}

// Touched reports whether this companion has answered person (the
// store's met record).
func (k *Keeper) Touched(person string) bool { return k.cfg.Store.Touched(person) }

// Touch records, on the keeper's goroutine, that this companion answered
// person.
func (k *Keeper) Touch(person string) {
	k.job("met", func(context.Context) {
		if err := k.cfg.Store.Touch(person); err != nil {
			k.cfg.Log.Error("memory: the reply was not written", "person", person, "err", err)
		}
	})
}

// Answer answers a person's memory command in message (messageID) by
// the rules, in lang, and acts on it: "what do you remember about me"
// describes their facts, with the rules' reading of what they said that
// is not written yet (newest wins by key); "forget me" forgets them at
// once (what waits, the journal's lines, then their facts on the
// keeper's goroutine) and logs the forget for the room; "forget that"
// drops the last thing they said, or their newest fact when it is
// written already. It reports the command (None when message is none:
// nothing is done).
func (k *Keeper) Answer(person, messageID, message, lang string) (cmd Command, answer string) {
	cmd = Control(message)
	st, log := k.cfg.Store, k.cfg.Log
	switch cmd {
	case None:
		return None, ""
	case Recall:
		facts := st.Facts(person)
		for _, f := range ruleFacts(k.pendingOf(person)) {
			facts = slices.DeleteFunc(facts, func(old Fact) bool { return f.Key != "" && old.Key == f.Key })
			facts = append(facts, f)
		}
		answer = Describe(lang, facts)
	case ForgetMe:
		k.pending = slices.DeleteFunc(k.pending, func(h Heard) bool { return h.Person == person })
		// At once, not only in the forget job: a crash before it runs must
		// not leave the person's words to be extracted at the next start.
		if err := st.Journal().Forget(person); err != nil {
			log.Error("memory: \"forget me\" did not reach the journal now; the forget job tries again", "person", person, "err", err)
		}
		answer = Acknowledge(lang, cmd, 0)
		at := k.cfg.Clock.Now()
		k.logForget(protocol.ForgetEntry{Person: person, At: at, MessageID: messageID})
		k.job("forget", func(context.Context) {
			k.forgetVoice(person, at)
			k.forget(person, messageID, 0)
		})
	case ForgetThat:
		answer = Acknowledge(lang, cmd, 1)
		if i := lastBy(k.pending, person); i >= 0 {
			id := k.pending[i].MessageID
			k.pending = slices.Delete(k.pending, i, i+1) // not written yet: never will be
			if err := st.Journal().Remove(id); err != nil {
				log.Error("memory: \"forget that\" did not reach the journal", "person", person, "err", err)
			}
			break
		}
		k.job("forget", func(context.Context) { k.forget(person, messageID, 0, newest(st.Facts(person))...) })
	}
	log.Info("memory: a person's command, answered by the rules", "person", person, "command", cmd)
	return cmd, answer
}

// lastBy is the index of the last thing p said in said, or -1.
func lastBy(said []Heard, p string) int {
	for i := len(said) - 1; i >= 0; i-- {
		if said[i].Person == p {
			return i
		}
	}
	return -1
}

// pendingOf is what p said that is not written yet.
func (k *Keeper) pendingOf(p string) []Heard {
	var out []Heard
	for _, h := range k.pending {
		if h.Person == p {
			out = append(out, h)
		}
	}
	return out
}

// newest is the id of the newest of facts (none when there is none).
func newest(facts []Fact) []string {
	if len(facts) == 0 {
		return nil
	}
	return []string{facts[len(facts)-1].ID}
}

// forget erases p's facts (ids; all of them when none) from the store and
// reports it (Forgot); one that fails is tried again later (attempt
// counts). Runs on the keeper's goroutine.
func (k *Keeper) forget(p, messageID string, attempt int, ids ...string) {
	n, err := k.cfg.Store.Forget(p, ids...)
	if err != nil {
		k.cfg.Metrics.BrainFailures.WithLabelValues("forget").Inc()
		if attempt+1 >= forgetRetries {
			k.cfg.Log.Error("memory: not forgotten, and no more tries; a restart tries again from the room's forget logs", "person", p, "err", err)
			return
		}
		k.cfg.Log.Error("memory: not forgotten; trying again", "person", p, "in", forgetRetry, "err", err)
		k.cfg.Clock.AfterFunc(forgetRetry, func() {
			k.job("forget", func(context.Context) { k.forget(p, messageID, attempt+1, ids...) })
		})
		return
	}
	k.cfg.Log.Info("memory: forgotten", "person", p, "facts", n)
	if f := k.cfg.Forgot; f != nil {
		f(p, messageID, n)
	}
}

// forgetVoice erases p's voiceprint made before at, if the robot has
// one. Runs on the keeper's goroutine.
func (k *Keeper) forgetVoice(p string, at time.Time) {
	if k.cfg.Voices == nil {
		return
	}
	n, err := k.cfg.Voices.Forget(p, at)
	if err != nil {
		k.cfg.Metrics.BrainFailures.WithLabelValues("forget").Inc()
		k.cfg.Log.Error("memory: the voiceprint was not erased", "person", p, "err", err)
		return
	}
	if n > 0 {
		k.cfg.Log.Info("memory: voiceprint erased", "person", p, "embeddings", n)
	}
}

// logForget adds e to this companion's forget log and publishes it
// (retained): a companion of the room that was away reads it when it
// comes back.
func (k *Keeper) logForget(e protocol.ForgetEntry) {
	k.applied.Add(e.MessageID)
	k.log = append(k.log, e)
	if len(k.log) > protocol.MaxForgets {
		k.log = slices.Clone(k.log[len(k.log)-protocol.MaxForgets:])
	}
	k.Republish()
}

// Republish publishes the forget log again (after a reconnect); nothing
// when it is empty.
func (k *Keeper) Republish() {
	if len(k.log) == 0 {
		return
	}
	l := protocol.ForgetLog{From: k.cfg.Me, Forgets: slices.Clone(k.log)}
	if err := k.cfg.Room.Forgets(l); err != nil {
		k.cfg.Log.Warn("memory: the forget log was not published again", "err", err)
	}
}

// Forget acts on a companion's forget log: each "forget me" not acted on
// yet forgets what this companion learned about that person before it
// was asked (what it learned since stays). Its own log, read back after
// a restart, is adopted, and acted on again: a forget that failed before
// the restart is tried once more.
func (k *Keeper) Forget(l protocol.ForgetLog) {
	if l.From == k.cfg.Me {
		for _, e := range l.Forgets {
			if !slices.ContainsFunc(k.log, func(o protocol.ForgetEntry) bool { return o.MessageID == e.MessageID }) {
				k.log = append(k.log, e)
			}
		}
		slices.SortFunc(k.log, func(a, b protocol.ForgetEntry) int { return a.At.Compare(b.At) })
		if len(k.log) > protocol.MaxForgets {
			k.log = slices.Clone(k.log[len(k.log)-protocol.MaxForgets:])
		}
	}
	st := k.cfg.Store
	for _, e := range l.Forgets {
		if !k.applied.Add(e.MessageID) {
			continue
		}
		k.job("forget", func(context.Context) {
			k.forgetVoice(e.Person, e.At)
			var ids []string
			facts := st.Facts(e.Person)
			for _, f := range facts {
				if f.Created.Before(e.At) {
					ids = append(ids, f.ID)
				}
			}
			switch {
			case len(ids) == len(facts) && (len(facts) > 0 || st.Met(e.Person)):
				k.forget(e.Person, e.MessageID, 0) // everything, the meeting too
			case len(ids) > 0:
				k.forget(e.Person, e.MessageID, 0, ids...)
			}
		})
	}
}
