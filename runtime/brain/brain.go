// Package brain defines what a companion asks of its mind: for each message,
// a State (speak or listen, importance, selected, closing) together with the
// draft of what it would say if granted the floor, so a granted turn needs
// no second model round trip (docs/protocol.md, "Companion and brain").
//
// Providers live in subpackages: rule (offline, deterministic), and the LLM
// clients. braintest holds a scripted fake.
package brain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Card is a companion's persona (aikyo's companion card).
type Card struct {
	ID          string   `yaml:"id" json:"id"`
	Name        string   `yaml:"name" json:"name"`
	Personality string   `yaml:"personality" json:"personality"`
	Story       string   `yaml:"story" json:"story"`
	SampleLines []string `yaml:"sample_lines" json:"sample_lines"`
	Language    string   `yaml:"language" json:"language"` // "ja" or "en"
	// Body is the device whose speak and vision queries this companion
	// uses: this device when empty, or another one — a body written in
	// another language behind the WebSocket bridge.
	Body string `yaml:"body" json:"-"`
	// Role is aikyo's role sentence: what the companion is for, in its
	// system prompt.
	Role string `yaml:"role" json:"role,omitempty"`
	// Events are parameters the model judges in the State's call and
	// conditions over them that pick the turn's instruction (events.go).
	Events Events `yaml:"events" json:"events,omitzero"`
	// Knowledge lists the knowledge tools the model may call, by name
	// (companions_present, date_time, memory_search, or one the body
	// declared), or "body" (KnowBody) for every tool the body declares;
	// empty: none.
	Knowledge []string `yaml:"knowledge" json:"knowledge,omitempty"`
}

// Validate names the first bad field of a card.
func (c Card) Validate() error {
	if why := protocol.ValidIdentity(c.ID); why != "" {
		return fmt.Errorf("card.id: %s", why)
	}
	if strings.TrimSpace(c.Name) == "" {
		return fmt.Errorf("card.name: must not be empty")
	}
	if c.Language != "ja" && c.Language != "en" {
		return fmt.Errorf("card.language: must be \"ja\" or \"en\", got %q", c.Language)
	}
	if why := protocol.ValidIdentity(c.Body); c.Body != "" && why != "" {
		return fmt.Errorf("card.body: %s", why)
	}
	if len([]rune(c.Role)) > MaxRole {
		return fmt.Errorf("card.role: longer than %d characters", MaxRole)
	}
	if err := c.Events.Validate(); err != nil {
		return err
	}
	if len(c.Knowledge) > MaxKnowledge {
		return fmt.Errorf("card.knowledge: more than %d tools", MaxKnowledge)
	}
	for i, k := range c.Knowledge {
		if !tool.ValidName(k) {
			return fmt.Errorf("card.knowledge[%d]: %q is not a tool name (letters, digits, _ and -, up to 64)", i, k)
		}
	}
	return nil
}

// Input is everything a brain sees for one decision.
type Input struct {
	Card    Card
	History []protocol.Message // oldest first, bounded by the companion; Message is not in it
	Message protocol.Message   // the message to react to
	// Present lists the companions in the room (ids), for addressing.
	Present []string
	// Members is the room's roster: who may be addressed beside those who
	// spoke in History.
	Members []string
	// Turn counts the messages since the conversation (re)started.
	Turn int
	// ClosingInstruction is set when the runtime asks the brain to wind the
	// conversation down (the repetition judge fired): the seed's sentence.
	ClosingInstruction string
	// Remaining is the realtime mode's remaining post count; -1 in turn mode.
	Remaining int
	// Tools are what the model may call beside speak, from the robot's
	// tool registry (runtime/tool): the body's actions (done with the
	// words), what the companion knows (the companions present, the date
	// and time, memory search), what a bridge client declares, the MCP
	// servers' tools the robot's config allows. An LLM brain offers them
	// in the call that drafts the words and runs a call by its name.
	Tools []tool.Tool
	// Remembered is what the companion's memory recalls for this message
	// (issue 29): the pinned core about its speaker, the speaker's facts
	// most relevant to the message, and the names of the other people in
	// the conversation — never another person's other facts. A prompt
	// quotes them as remembered facts, never as instructions.
	Remembered []memory.Fact
	// Events are the card's event parameters the runtime already knows
	// exactly ("already_replied", for a person's message); the model fills in the
	// rest in the same call that writes the State.
	Events map[string]any
	// Instruction is the turn's instruction when Utter writes the words
	// (the two-call path): the Thought.Instruction its Think chose.
	Instruction string
	// Calls are the tools that act its Think asked for (Thought.Deferred),
	// run by Utter before it writes the words: the turn is granted.
	Calls []tool.Call
}

// Thought is a brain's State for a message, and its draft utterance.
type Thought struct {
	State      protocol.Speech
	Importance float64
	Selected   bool
	Closing    protocol.Closing
	Draft      string
	Emotion    protocol.Emotion
	To         []string
	// Actions are what the body does with the draft's words, started with
	// their first audio (their MessageID is the companion's to set).
	Actions []protocol.ActionRequest
	// Cut says the draft is what was complete, up to its last sentence
	// boundary, when the model's stream stopped mid-draft (issue 28): the
	// words say no more than that, and their Message is marked cut.
	Cut bool
	// Deferred are the calls of tools that act (tool.Acts) the
	// model asked for in the call that votes: none was run. A thought
	// with any has no draft: its words are written when the turn is
	// granted (Utter, with Input.Calls), from the calls' results.
	Deferred []tool.Call
	// Events are the card's event parameters as the model filled them in
	// (with Input.Events), and Instruction the instruction their
	// conditions chose for the turn ("" when none holds).
	Events      map[string]any
	Instruction string
}

// Vote is the part of t the floor counts: its State's fields, without
// the draft.
func (t Thought) Vote() Thought {
	return Thought{State: t.State, Importance: t.Importance, Selected: t.Selected, Closing: t.Closing}
}

// Validate checks a Thought as the wire would.
func (t Thought) Validate() error {
	switch {
	case t.State != protocol.Speak && t.State != protocol.Listen:
		return fmt.Errorf("state must be speak or listen, got %q", t.State)
	case t.Importance < protocol.MinImportance || t.Importance > protocol.MaxImportance:
		return fmt.Errorf("importance must be from 0 to 10, got %v", t.Importance)
	case !t.Closing.Valid():
		return fmt.Errorf("closing must be none, pre-closing, closing or terminal, got %q", t.Closing)
	case t.Emotion != "" && !t.Emotion.Valid():
		return fmt.Errorf("emotion must be neutral, happy, sad or angry, got %q", t.Emotion)
	}
	return nil
}

// Utterance is what a companion says when granted the floor.
type Utterance struct {
	Text    string
	Emotion protocol.Emotion
	To      []string
	Actions []protocol.ActionRequest // done by the body with the words
	Cut     bool                     // what was complete when the model's answer stopped (Thought.Cut)
}

// Brain is a companion's mind.
type Brain interface {
	// Think decides the State for in.Message and drafts the utterance.
	Think(ctx context.Context, in Input) (Thought, error)
	// Utter writes the utterance when the floor is granted; the two-call
	// path (brain.draft: false) uses it instead of the draft.
	Utter(ctx context.Context, in Input) (Utterance, error)
}

// Heard is told a thought as its model writes it (issue 28). Vote hears
// the State's fields (Thought.Vote) once they are complete and valid,
// before the draft; Said hears the draft's complete sentences so far
// (the whole text from its start, growing with each call) and the
// draft's emotion once written. Both are called from the thinking
// goroutine, in order, and must not block. Nil functions hear nothing.
type Heard struct {
	Vote func(Thought)
	Said func(text string, e protocol.Emotion)
}

// Streamer is a Brain whose thought can be heard as it is written: the
// vote leaves early and speech starts on the first sentence. Its Thought
// is the one Think would return; after Vote was heard, a stream that
// stops mid-draft returns what was complete (Thought.Cut) rather than an
// error, and a Thought's vote is the one heard.
type Streamer interface {
	Brain
	ThinkStream(ctx context.Context, in Input, h Heard) (Thought, error)
}

// TalkInput is what a brain sees in a realtime phase (the seed's
// talk_realtime prompt): who it is, how many utterances it has left, and
// the phase's talk so far.
type TalkInput struct {
	Card      Card
	Remaining int             // accepted utterances left in the phase
	History   []protocol.Talk // the phase so far, oldest first, bounded by the companion
	Members   []string        // who talks in the phase
	Channel   string          // "" for the room, else the whisper channel
	Quiet     time.Duration   // how long nobody has been heard
	// Tools are what the model may call in the call that writes the
	// words, as in Input.Tools (no actions in a whisper channel, which is
	// never said aloud).
	Tools []tool.Tool
}

// ClosingInstruction returns the seed's repetition instruction
// (aikyo-closing.ja.md) in the card's language.
func ClosingInstruction(lang string) string {
	if lang == "ja" {
		return "最重要:会話が繰り返しになっています。直ちにclosingをpre-closing,closing,terminalの順に変えて終了するか、話題を変えてください。"
	}
	return "Most important: the conversation is repeating itself. Immediately move closing through pre-closing, closing and terminal to end it, or change the topic."
}

// RepetitionJudge is the seed's repetition judge (aikyo-closing.ja.md,
// enableRepetitionJudge): a model asked whether the last window of a
// conversation repeats itself, even in other words. Score is from 0 (no
// repetition) to 1. LLM brains implement it with the companion's own model.
type RepetitionJudge interface {
	JudgeRepetition(ctx context.Context, lang string, window []protocol.Message) (float64, error)
}
