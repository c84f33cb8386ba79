package protocol

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// JSONRPC is the only accepted value of the "jsonrpc" field.
const JSONRPC = "2.0"

// Method names on the wire.
const (
	MethodMessage     = "message.send"
	MethodState       = "state.send"
	MethodQuery       = "query.send"
	MethodQueryCancel = "query.cancel"
)

// Message is what a companion, a user client or the floor says in a room
// (aikyo's message.send).
type Message struct {
	JSONRPC string        `json:"jsonrpc"`
	Method  string        `json:"method"`
	Params  MessageParams `json:"params"`
}

// MessageParams is the body of a Message.
type MessageParams struct {
	ID      string   `json:"id"`
	From    string   `json:"from"`
	To      []string `json:"to"`
	Message string   `json:"message"`
	// Metadata is free-form as in aikyo; "emotion", when present, must be one
	// of the Emotion values.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// MetaSpoken is the metadata key a companion sets to false on a Message
// whose words its body failed to speak: the words are in the room's
// conversation, but nobody heard them.
const MetaSpoken = "spoken"

// MetaCut marks the Message of a companion whose model's answer stopped
// mid-draft (issue 28): its words are what was complete, up to the last
// sentence boundary, and the robot said no more.
const MetaCut = "cut"

// MetaSay marks a person's Message that asks the one companion it is
// addressed to (its only "to") to say its words aloud, as they are: an
// agent's "say" over MCP. That companion answers by the rules — no model
// — when the room gives it the turn; every other companion listens.
const MetaSay = "say"

// SayRequest reports whether m asks to companion the words it carries
// (MetaSay true, to companion alone).
func SayRequest(m Message, companion string) (asks, forMe bool) {
	say, _ := m.Params.Metadata[MetaSay].(bool)
	if !say {
		return false, false
	}
	return true, len(m.Params.To) == 1 && m.Params.To[0] == companion
}

// NewMessage builds a message.send notification.
func NewMessage(id, from string, to []string, text string, emotion Emotion) Message {
	if to == nil {
		to = []string{}
	}
	m := Message{JSONRPC: JSONRPC, Method: MethodMessage, Params: MessageParams{ID: id, From: from, To: to, Message: text, Metadata: map[string]any{}}}
	if emotion != "" {
		m.Params.Metadata["emotion"] = string(emotion)
	}
	return m
}

// Emotion returns the message's emotion metadata, or EmotionNeutral.
func (p MessageParams) Emotion() Emotion {
	if s, ok := p.Metadata["emotion"].(string); ok {
		return Emotion(s)
	}
	return EmotionNeutral
}

// Heard reports whether the message is words a microphone heard
// (metadata source "voice": the room's hearing arbiter published it).
func (p MessageParams) Heard() bool { return p.Metadata[MetaSource] == SourceVoice }

// Emotion is the tone of an utterance (aikyo's speak tool).
type Emotion string

const (
	EmotionNeutral Emotion = "neutral"
	EmotionHappy   Emotion = "happy"
	EmotionSad     Emotion = "sad"
	EmotionAngry   Emotion = "angry"
)

// Valid reports whether e is a known emotion.
func (e Emotion) Valid() bool {
	switch e {
	case EmotionNeutral, EmotionHappy, EmotionSad, EmotionAngry:
		return true
	}
	return false
}

// Speech is a companion's wish for the next turn.
type Speech string

const (
	Speak  Speech = "speak"
	Listen Speech = "listen"
)

// Closing is the stage of winding a conversation down (aikyo-closing).
type Closing string

const (
	ClosingNone     Closing = "none"
	ClosingPre      Closing = "pre-closing"
	ClosingClosing  Closing = "closing"
	ClosingTerminal Closing = "terminal"
)

// Valid reports whether c is one of the four stages.
func (c Closing) Valid() bool {
	switch c {
	case ClosingNone, ClosingPre, ClosingClosing, ClosingTerminal:
		return true
	}
	return false
}

// Rank orders the stages: none 0, pre-closing 1, closing 2, terminal 3.
func (c Closing) Rank() int {
	switch c {
	case ClosingPre:
		return 1
	case ClosingClosing:
		return 2
	case ClosingTerminal:
		return 3
	}
	return 0
}

// Importance bounds, as in aikyo's StateBody schema.
const (
	MinImportance = 0
	MaxImportance = 10
)

// State is a companion's vote on who speaks after a message (aikyo's
// state.send).
type State struct {
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	Params  StateParams `json:"params"`
}

// StateParams is the body of a State.
type StateParams struct {
	ID         string  `json:"id,omitempty"` // present in aikyo's Japanese schema only
	From       string  `json:"from"`
	MessageID  string  `json:"messageId"`
	State      Speech  `json:"state"`
	Importance float64 `json:"importance"`
	Selected   bool    `json:"selected"`
	Closing    Closing `json:"closing"`
}

// NewState builds a state.send notification.
func NewState(p StateParams) State {
	if p.Closing == "" {
		p.Closing = ClosingNone
	}
	return State{JSONRPC: JSONRPC, Method: MethodState, Params: p}
}

// Grant reasons.
const (
	ReasonSelected = "selected" // the speaker was named and wanted it most
	ReasonSpeak    = "speak"    // the speaker asked to speak with the highest importance
	ReasonRest     = "rest"     // nobody eligible: the conversation rests
	ReasonExpired  = "expired"  // the pending message was evicted before a decision
	ReasonHeld     = "held"     // a human holds the floor
)

// Decided-by values of a TurnGrant.
const (
	DecidedAllVoted = "all-voted"
	DecidedDeadline = "deadline"
	DecidedEvicted  = "evicted"
	// DecidedSettled: votes were still owed, but none of them could have
	// changed the decision (issue 28); Missing lists them.
	DecidedSettled = "settled"
	// DecidedRetracted: the speaker granted took its vote back before it
	// said anything (its model's answer failed after the vote, issue 28),
	// and the floor decided again without it.
	DecidedRetracted = "retracted"
)

// TurnGrant is the floor's decision for one message (added by Chorus).
type TurnGrant struct {
	From      string   `json:"from"` // the floor identity
	MessageID string   `json:"messageId"`
	Speaker   *string  `json:"speaker"` // null: nobody speaks
	Reason    string   `json:"reason"`
	DecidedBy string   `json:"decidedBy"`
	Votes     []Vote   `json:"votes"`
	Missing   []string `json:"missing,omitempty"` // participants that did not vote in time
}

// SpeakerID returns the granted speaker or "".
func (g TurnGrant) SpeakerID() string {
	if g.Speaker == nil {
		return ""
	}
	return *g.Speaker
}

// RestsAtTerminal reports whether g rests the room with every voter at
// the terminal stage of closing: the conversation is over.
func (g TurnGrant) RestsAtTerminal() bool {
	if g.Speaker != nil || len(g.Votes) == 0 {
		return false
	}
	for _, v := range g.Votes {
		if v.Closing != ClosingTerminal {
			return false
		}
	}
	return true
}

// Vote is one State as the floor counted it.
type Vote struct {
	From       string  `json:"from"`
	State      Speech  `json:"state"`
	Importance float64 `json:"importance"`
	Selected   bool    `json:"selected"`
	Closing    Closing `json:"closing"`
}

// VoteOf condenses a State into a Vote.
func VoteOf(p StateParams) Vote {
	return Vote{From: p.From, State: p.State, Importance: p.Importance, Selected: p.Selected, Closing: p.Closing}
}

// Presence is retained under presence/{id}; the Last Will sets Online false.
// ThinkMs, when set, is how long the companion expects to take to vote on
// a message (its brain's think time): the floor sizes each vote's deadline
// from its participants' announcements, within its ceiling.
type Presence struct {
	Online  bool      `json:"online"`
	Device  string    `json:"device"`
	Since   time.Time `json:"since"`
	ThinkMs int       `json:"thinkMs,omitempty"`
	// Hears says the companion's body has a microphone that reports what
	// it hears (docs/protocol.md, "Heard reports"): the floor waits for the reports of
	// the utterance from every such body present, and not at all when
	// there is only one.
	Hears bool `json:"hears,omitempty"`
	// Sees says the companion's device has a camera: it answers a vision
	// query with a frame (a room console offers its picture).
	Sees bool `json:"sees,omitempty"`
}

// MaxThinkMs bounds an announced think time (10 minutes).
const MaxThinkMs = 600_000

// Query asks a device for something (aikyo's query.send). Method is
// query.send, or query.cancel to stop the running query named by Params.Body's
// "id".
type Query struct {
	JSONRPC string      `json:"jsonrpc"`
	Method  string      `json:"method"`
	ID      string      `json:"id"`
	Params  QueryParams `json:"params"`
}

// QueryParams is the body of a Query.
type QueryParams struct {
	From string          `json:"from"`
	Type string          `json:"type"`
	Body json.RawMessage `json:"body,omitempty"` // a JSON object, or absent
}

// QueryResult answers a Query: exactly one of Result and Error is set.
type QueryResult struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      string      `json:"id"`
	Result  *ResultBody `json:"result,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// ResultBody is a successful or failed result with its data.
type ResultBody struct {
	Success bool            `json:"success"`
	Body    json.RawMessage `json:"body"`
}

// Phase kinds and events of the realtime mode.
const (
	PhaseTalk    = "talk"
	PhaseWhisper = "whisper"
	PhaseStart   = "start"
	PhaseEnd     = "end"
)

// Why a realtime phase ended (Phase.Reason).
const (
	EndAllOver        = "all_over"        // every present member said Over
	EndPhaseTimeout   = "phase_timeout"   // the phase's time is up
	EndSilenceTimeout = "silence_timeout" // nobody was accepted for this long
	EndPerDay         = "per_day"         // the room's utterances for the phase are used up
	EndOperator       = "operator"        // chorus phase end
)

// Why the floor refused a post (PostAck.Reason); Truncated is a warning
// on an accepted one.
const (
	RejectRateLimited    = "rate_limited"
	RejectQuotaExhausted = "quota_exhausted"
	RejectPhaseClosed    = "phase_closed"
	RejectNotMember      = "not_member"
	RejectEmpty          = "empty"
	RejectFloorBusy      = "floor_busy"
	WarnTruncated        = "truncated"
)

// PostOver is what a companion posts when it has nothing more to say in
// the phase; TalkListen is what its brain answers to say nothing now (it
// is never posted).
const (
	PostOver   = "Over"
	TalkListen = "LISTEN"
)

// Limits are the hard limits of a realtime phase (the aiwolf realtime
// design's tuning table). PerDay is the room's total of accepted
// utterances in one phase (a phase is one "day" of talk).
type Limits struct {
	RateLimitMs      int  `json:"rate_limit"`      // minimum gap between two accepted posts of one member
	PerAgent         int  `json:"per_agent"`       // accepted posts per member per phase
	PerDay           int  `json:"per_day"`         // accepted posts of the room per phase
	MaxLength        int  `json:"max_length"`      // characters (runes), not bytes
	PhaseTimeoutMs   int  `json:"phase_timeout"`   // the phase ends after this
	SilenceTimeoutMs int  `json:"silence_timeout"` // the phase ends after this long without an accepted post
	Overlap          bool `json:"overlap"`         // false: a post is accepted only while nobody speaks
}

// Talk is one accepted utterance of a phase, numbered (the seed's
// talk_history entry).
type Talk struct {
	Idx   int    `json:"idx"`
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

// Phase announces the start or end of a realtime phase: the start carries
// the seed's TALK_START content (limits, each member's remain_count, the
// recent talk_history), the end its reason.
type Phase struct {
	From    string         `json:"from"`
	Phase   string         `json:"phase"`
	Event   string         `json:"event"`
	Kind    string         `json:"kind"`
	Channel string         `json:"channel,omitempty"` // whisper phases
	Reason  string         `json:"reason,omitempty"`  // end events
	Members []string       `json:"members,omitempty"`
	Limits  Limits         `json:"limits"`
	Remain  map[string]int `json:"remain_count,omitempty"`
	History []Talk         `json:"talk_history,omitempty"`
}

// Post is a companion's realtime utterance: its text, or Over.
type Post struct {
	From  string `json:"from"`
	Phase string `json:"phase"`
	ID    string `json:"id"`
	Text  string `json:"text"`
}

// PostAck is the floor's answer to a Post: accepted with its idx and the
// author's remaining count, or refused with a reason (Truncated is a
// warning on an accepted post).
type PostAck struct {
	From      string `json:"from"`
	Phase     string `json:"phase"`
	PostID    string `json:"postId"`
	Accepted  bool   `json:"accepted"`
	Idx       int    `json:"idx,omitempty"`
	Remaining int    `json:"remaining"`
	Reason    string `json:"reason,omitempty"`
}

// Realtime broadcast metadata: a Message the floor publishes for an
// accepted post carries the phase, the post's idx, its author and the
// author's remaining count (the seed's TALK_BROADCAST).
const (
	MetaPhase   = "phase"
	MetaIdx     = "idx"
	MetaRemain  = "remain_count"
	MetaSpeaker = "speaker"
	MetaChannel = "channel"
)

// NewID returns a random 128-bit id in hex, for messages and queries.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never on Linux ≥ 3.17
	}
	return hex.EncodeToString(b[:])
}

// Speaking is a companion's speaking status (retained on
// speaking/{companion}): set when its device starts playing the words of
// MessageID, cleared when the audio has drained. DurationMs is the
// announced length while speaking (an estimate: the room waits for the
// end at most this long plus a margin), the real one once it ended.
type Speaking struct {
	MessageID  string    `json:"messageId"`
	Speaking   bool      `json:"speaking"`
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int       `json:"durationMs"`
}

// MaxSpeakingMs bounds an announced duration (10 minutes): a longer one is
// absurd and dropped, so no status can hold a room up for long.
const MaxSpeakingMs = 600_000

// MetaSpeaking is the metadata key a companion sets to true on a Message
// whose words its device is playing as the Message goes out (overlapped
// turns): the room votes while the words are heard, and the next speaker
// waits for the end of this one's audio (its speaking status).
const MetaSpeaking = "speaking"

// Hold says whether a human holds the floor through a companion's body (a
// long button press): while any hold is on, the floor grants nobody.
type Hold struct {
	From  string    `json:"from"`
	Held  bool      `json:"held"`
	Since time.Time `json:"since"`
}
