package companion

import (
	"context"
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
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
	// Voices are the robot's voiceprints, when it identifies voices:
	// "forget me" erases the person's with their facts.
	Voices *memory.Voices
}

const (
	// KnownMet is the event parameter the companion answers exactly: has
	// it answered the person before (aikyo's already_replied, replied.go).
	KnownMet = brain.EventAlreadyReplied
)

// newKeeper is the companion's memory keeper, nil without a memory.
func (c *Companion) newKeeper() *memory.Keeper {
	mc := c.cfg.Memory
	if mc == nil || mc.Store == nil {
		return nil
	}
	var x memory.Extractor
	if mc.Extractor != nil {
		x = extractor{model: mc.Extractor, card: c.cfg.Card}
	}
	return memory.NewKeeper(memory.KeeperConfig{Store: mc.Store, Me: c.me(), Recall: mc.Recall, RestAfter: mc.RestAfter,
		Extractor: x, PerHour: mc.PerHour, Embedder: mc.Embedder, EmbedWait: mc.EmbedWait, Share: mc.Share,
		Room: keeperRoom{c}, Quiet: func(ctx context.Context) { c.deliver(ctx, event{kind: evRest}) },
		Forgot: mc.Forgot, Voices: mc.Voices, Clock: c.cfg.Clock, Log: c.log, Metrics: c.m})
}

// extractor is the companion's model as the keeper's extractor: the
// card says the language.
type extractor struct {
	model brain.Extractor
	card  brain.Card
}

func (x extractor) Extract(ctx context.Context, known []memory.Fact, said []memory.Heard) ([]memory.Fact, error) {
	return x.model.Extract(ctx, brain.ExtractInput{Card: x.card, Known: known, Said: said})
}

// keeperRoom is what the keeper tells the room: shared facts (on the
// keeper's goroutine) and the forget log (queued on the outbox: the
// loop never waits for the network).
type keeperRoom struct{ c *Companion }

func (r keeperRoom) Share(ctx context.Context, s protocol.Shared) error {
	return r.c.cfg.Room.SendShared(ctx, s)
}

func (r keeperRoom) Forgets(l protocol.ForgetLog) error { return r.c.cfg.Room.QueueForgets(r.c.out, l) }

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

// heard is m as the memory keeps what a person said.
func heard(m protocol.Message) memory.Heard {
	return memory.Heard{Person: m.Params.From, MessageID: m.Params.ID, Text: m.Params.Message}
}

// personal reports whether m's author is answered with, and remembered
// for, what the robots know of them: a typed person always; a heard one
// when the room's robots were sure of the voice, or identify no voices
// (the hearing user, as ever). An unknown voice, or one the robots were
// not sure of, gets nobody's facts and leaves none (docs/hearing.md,
// "Who is speaking").
func personal(m protocol.Message) bool {
	if m.Params.Metadata[protocol.MetaSource] != protocol.SourceVoice {
		return true
	}
	r, identified := m.Params.Metadata[protocol.MetaVoice].(string)
	return !identified || r == protocol.VoiceSure
}

// enrolment is the enrolment by voice m is part of, if any.
func enrolment(m protocol.Message) (protocol.Enrolment, bool) {
	o, ok := m.Params.Metadata[protocol.MetaVoiceEnrol].(map[string]any)
	if !ok || m.Params.Metadata[protocol.MetaSource] != protocol.SourceVoice {
		return protocol.Enrolment{}, false
	}
	num := func(k string) int {
		f, _ := o[k].(float64) // decoded JSON
		if i, ok := o[k].(int); ok {
			return i
		}
		return int(f)
	}
	e := protocol.Enrolment{Got: num("got"), Need: num("need")}
	e.Taken, _ = o["taken"].(bool)
	e.Name, _ = o["name"].(string)
	e.Person, _ = o["person"].(string)
	return e, e.Need > 0 && e.Name != ""
}

// control answers a person's memory command, or their enrolment by
// voice, by the rules (the keeper's Answer, memory.EnrolReply), with a
// vote the floor counts as any other; it reports false when m is none.
// A voice the robots are not sure of is never told nor made to forget
// anyone's facts.
func (c *Companion) control(ctx context.Context, m protocol.Message, e event) bool {
	p := m.Params.From
	lang := c.cfg.Card.Language
	var cmd memory.Command
	var text string
	if en, ok := enrolment(m); ok {
		text = memory.EnrolReply(lang, en)
	} else if !personal(m) {
		if memory.Control(m.Params.Message) == memory.None {
			return false
		}
		text = memory.UnsureReply(lang)
	} else if cmd, text = c.mem.Answer(p, m.Params.ID, m.Params.Message, lang); cmd == memory.None {
		return false
	}
	if cmd == memory.ForgetMe {
		delete(c.touched, p)
	}
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

// recall adds to in what the memory knows of m's author (a person), and
// tells the keeper what they said; people are who a recall by meaning
// asks about (startThinking).
func (c *Companion) recall(ctx context.Context, m protocol.Message, in brain.Input) (brain.Input, []string) {
	people := c.people(m)
	in.Remembered = c.mem.Recall(m.Params.From, m.Params.Message, people)
	c.mem.Heard(ctx, heard(m))
	return in, people
}
