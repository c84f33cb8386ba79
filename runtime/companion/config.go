// A companion's configuration, its defaults and its checks.

package companion

import (
	"errors"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Defaults.
const (
	DefaultHistory = 10
	// DefaultMaxTurn is room.max_turn when unset: aikyo's maxTurn is
	// null (no bound) by default and 10 in its docs' example; Chorus's
	// shipped configs use 20, and a room always has a bound.
	DefaultMaxTurn = 20
	// CloseAsks is how often the repetition judge asks the brain to close
	// in vain before the companion moves the closing stage on itself.
	CloseAsks           = 3
	DefaultPause        = 200 * time.Millisecond // room.pause; see TestPauseDefault
	DefaultThinkTimeout = brain.DefaultThinkTimeout
	DefaultSpeakTimeout = query.DefaultTimeout
	DefaultResendEvery  = time.Second
	DefaultJudgeEvery   = repetition.DefaultJudgeEvery
	DefaultJudgeTimeout = repetition.DefaultJudgeTimeout
	DefaultResendFor    = time.Minute // as the floor's RegrantFor
	maxThinking         = 4
	maxThoughts         = 32
	maxAnswers          = 32
	queueSize           = 1024
	maxPresent          = 1024 // companions followed in one room
	recentMessages      = 512  // message ids remembered, to handle each once
)

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
	Queries query.Asker

	HistorySize int           // messages kept, default 10
	Pause       time.Duration // wait after a grant before speaking, default 200 ms
	MaxTurn     int           // States before terminal is forced; 0 = no limit
	Threshold   float64       // repetition threshold, default 0.7
	Window      int           // repetition window, default 5
	// Judge is the model's repetition judge; nil judges with the local
	// score only. JudgeEvery (default 4) is the fewest messages between two
	// questions to it, JudgeTimeout (default 10 s) how long one may take.
	Judge        brain.RepetitionJudge
	JudgeEvery   int
	JudgeTimeout time.Duration
	// NoRepetition turns repetition judging off, the local score too (the
	// seed's enableRepetitionJudge: false).
	NoRepetition bool
	TwoCall      bool          // brain.draft: false — ask Utter after the grant
	ThinkTimeout time.Duration // per brain call, default 20 s
	SpeakTimeout time.Duration // speak query, default 30 s
	ResendEvery  time.Duration // State sent again until its grant is seen, default 1 s
	ResendFor    time.Duration // ... while its message is younger than this, default 1 min
	Clock        clock.Clock

	// Presence is the companion's retained presence, for the think time it
	// announces: a new estimate (from its brain's measured latency) is
	// announced when it moves by more than a quarter, at most every 5 s.
	// It is also said again when the room reads the companion offline
	// while it runs (a Last Will of an older connection). nil announces
	// nothing.
	Presence *room.Announcement
	// ExpectThink is the think time announced before any call is measured
	// (the brain's timeout for a model, its delay for the rule brain).
	ExpectThink time.Duration

	// Overlap runs overlapped turns (voice.go, turn.go): the Message goes out when
	// the audio starts, the next robot prepares while this one talks and
	// starts when it ends plus Pause. False is aikyo's order: speak, then
	// publish.
	Overlap bool
	// BargeIn is what a user's Message does to this companion's words:
	// protocol.BargeInSentence (default), BargeInImmediate or BargeInOff.
	BargeIn protocol.BargeIn

	// Muted, when it returns true, makes the companion vote listen and never
	// take the floor (the mute button).
	Muted func() bool
	// BodyOnline, when set and false, makes the companion vote listen and
	// never take the floor, as muted: its body (Device) is offline — a
	// bridge client that went away — and a turn would end in a speak
	// query that cannot be answered.
	BodyOnline func() bool
	// OnStatus is told every status change; it must not block.
	OnStatus func(Status)
	// SpeakMore says the body takes a speak that is still being written
	// (protocol.TypeSpeakMore): with a brain that streams, a granted turn
	// starts speaking on the draft's first sentence. chorusd's own body
	// does; a body behind the bridge does not, and gets the whole draft.
	SpeakMore bool
	// NoHold says the body does not know the speak hold (a body behind
	// the bridge, as aikyo's clients): in overlapped turns it is handed its
	// words only when the floor is free — the companion waits for the
	// voice before it itself — and a result that gives no length stands
	// for the speech estimate. chorusd's own body knows the hold.
	NoHold bool
	// Actions lists what the companion's body can do now (docs/actions.md):
	// its brain may call them with its words, and the body
	// (Device) is asked to do them as the words start. nil: none.
	Actions func() []protocol.ActionDef
	// Knowledge lists the knowledge tools the companion's body declares
	// now (a bridge client's knowledge.declare, issue 29); nil: none. The
	// card's knowledge list allows each by its name or by the word "body"
	// (brain.KnowBody); a call asks the body (Device) a knowledge query.
	Knowledge func() []protocol.KnowledgeDef
	// Tools are the MCP servers' tools the robot's config allows
	// (tools.mcp), as they are now: offered whatever card.knowledge says;
	// those that act run only in a granted turn (tool.Acts).
	Tools func() []tool.Tool
	// Registry is the robot's tool registry, which the companion adds its
	// own tools and the body's to; nil: one of its own.
	Registry *tool.Registry
	// HeardAs is the identity the room publishes a heard person's
	// Message under (hearing.user; default protocol.DefaultHeardUser): a
	// think on their words so far is a think on a Message of theirs
	// (eager.go).
	HeardAs string
	// NoEager: the companion does not think on a person's words so far
	// (hearing.vad.eager: off), only on their Message.
	NoEager bool
	// Memory is the companion's long-term memory (memory.go, issue 29);
	// nil remembers nothing.
	Memory *Memory
}

// checked is cfg with its defaults, or the first thing wrong with it.
func (cfg Config) checked() (Config, error) {
	if cfg.Room == nil || cfg.Brain == nil {
		return cfg, errors.New("companion: room and brain are required")
	}
	if len(cfg.Room.Members) == 0 {
		return cfg, fmt.Errorf("companion: room %s has no roster: list its companions (room.members)", cfg.Room.Name)
	}
	if err := cfg.Card.Validate(); err != nil {
		return cfg, fmt.Errorf("companion: %w", err)
	}
	if cfg.Device != "" && cfg.Queries == nil {
		return cfg, errors.New("companion: a device needs a query client")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.HistorySize <= 0 {
		cfg.HistorySize = DefaultHistory
	}
	if cfg.HeardAs == "" {
		cfg.HeardAs = protocol.DefaultHeardUser
	}
	def(&cfg.Pause, DefaultPause)
	def(&cfg.ThinkTimeout, DefaultThinkTimeout)
	def(&cfg.SpeakTimeout, DefaultSpeakTimeout)
	def(&cfg.ResendEvery, DefaultResendEvery)
	def(&cfg.ResendFor, DefaultResendFor)
	def(&cfg.JudgeTimeout, DefaultJudgeTimeout)
	if cfg.JudgeEvery <= 0 {
		cfg.JudgeEvery = DefaultJudgeEvery
	}
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
	if online := cfg.BodyOnline; online != nil { // away: muted, or no body to speak with
		muted := cfg.Muted
		cfg.Muted = func() bool { return muted() || !online() }
	}
	switch cfg.BargeIn {
	case "":
		cfg.BargeIn = protocol.BargeInSentence
	case protocol.BargeInSentence, protocol.BargeInImmediate, protocol.BargeInOff:
	default:
		return cfg, fmt.Errorf("companion: barge-in %q: want sentence, immediate or off", cfg.BargeIn)
	}
	return cfg, nil
}
