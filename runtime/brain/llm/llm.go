// Package llm is the brain on a chat model, whatever the provider: it
// renders the prompts, asks for the State and the draft in one call with
// JSON-schema output, runs the vision tool (a vision query to the
// companion's own device, then the image sent to the model to describe),
// and checks what the model returns. Providers (runtime/brain/openai,
// runtime/brain/anthropic) only translate a Request to their API.
//
// Bad output — invalid JSON, unknown fields, a value out of range, an
// unknown enum, an empty utterance — is an error naming what is wrong; the
// companion retries once and then listens. What the model may say is
// bounded where its output is parsed: an utterance longer than
// MaxUtterance characters is cut at a sentence boundary (counted in
// chorus_brain_clipped_total), and its addressees are kept to the room's
// members and those who spoke in the conversation.
//
// Issue 29: when the card has events, the state answer carries an events
// object (StateSchemaWith: after the vote, before the draft); the model's
// values are checked against the card's params (what does not fit is
// dropped and counted, reason "bad_events", never failing the turn),
// merged with Input.Events (known values win), and Thought.Instruction is
// the first condition that holds (brain.Events.Instruction). Knowledge
// tools (Input.Knowledge, as card.knowledge allows) are offered beside
// the actions in the call that writes the words; a call runs within
// Brain.KnowledgeTimeout and its answer, clipped to MaxKnowledgeText, is a tool
// turn marked as data. Extract (brain.Extractor) asks for the lasting
// facts people said about themselves in one call (ExtractSchema,
// ParseExtract).
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/prompts"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/sentence"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Role of a turn in a chat.
type Role string

const (
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
)

// Image is a picture sent to the model.
type Image struct {
	MIME   string
	Base64 string
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// Turn is one message of a chat.
type Turn struct {
	Role       Role
	Text       string
	Image      *Image     // user turns
	ToolCalls  []ToolCall // assistant turns
	ToolCallID string     // tool turns: which call this answers
	ToolName   string
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments
}

// Request is one chat call.
type Request struct {
	System     string
	Turns      []Turn
	Schema     map[string]any // structured output; nil for free text
	SchemaName string
	Tools      []ToolDef
	ForceTool  string // the model must call this tool
}

// Response is the model's answer.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Refusal   string
	Truncated bool // stopped by the token limit
}

// Chatter is a chat model provider.
type Chatter interface {
	Chat(ctx context.Context, r Request) (Response, error)
}

// Streamer is a Chatter that streams its answer (issue 28): text hears
// the answer's text as the model writes it, piece by piece in order; the
// whole Response comes at the end, as Chat's. A server that does not
// stream gets one Chat, its whole text heard at once.
type Streamer interface {
	Chatter
	ChatStream(ctx context.Context, r Request, text func(piece string)) (Response, error)
}

// ErrNoImages is returned (wrapped) by a provider whose model refused an
// image part.
var ErrNoImages = errors.New("the model does not accept images")

// Looker takes a picture with the companion's own camera (a vision query).
type Looker func(ctx context.Context) (Image, error)

// DefaultMaxUtterance bounds an utterance (brain.max_utterance).
const DefaultMaxUtterance = brain.DefaultMaxUtterance

// Brain is a brain.Brain on a Chatter.
type Brain struct {
	Chat   Chatter
	Look   Looker // nil: no camera, no vision tool
	Draft  bool   // ask for the draft in the state call (brain.draft)
	Whole  bool   // never stream: ask for whole answers (brain.stream: false)
	Log    *slog.Logger
	Rounds int // tool rounds per call, default 3
	// MaxUtterance is the longest utterance in characters (runes); longer
	// ones are cut at a sentence boundary. Default DefaultMaxUtterance.
	MaxUtterance int
	Metrics      *metrics.Metrics
	// KnowledgeTimeout bounds one call of a knowledge tool; default
	// DefaultKnowledgeTimeout.
	KnowledgeTimeout time.Duration
	// ToolBudget bounds the knowledge and tool calls one model call runs
	// (a model that calls a tool again and again is told no); default
	// DefaultToolBudget.
	ToolBudget int
}

var _ brain.Brain = (*Brain)(nil)

var speechEnum = []any{"speak", "listen"}
var closingEnum = []any{"none", "pre-closing", "closing", "terminal"}
var emotionEnum = []any{"neutral", "happy", "sad", "angry"}

// Properties are a JSON Schema's "properties" in the order they are sent:
// models write an object's fields in the order its schema lists them, and
// a map would be sent in sorted key order. The state answer lists its
// vote before the draft, and the draft its emotion before its words, so
// that a streamed answer can be acted on as soon as each is written
// (issue 28).
type Properties []Property

// Property is one property of a schema: its name and its own schema.
type Property struct {
	Name   string
	Schema map[string]any
}

// MarshalJSON writes p as a JSON object, its properties in order.
func (p Properties) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, prop := range p {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(prop.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(prop.Schema)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// Get returns the schema of the property named name, or nil.
func (p Properties) Get(name string) map[string]any {
	for _, prop := range p {
		if prop.Name == name {
			return prop.Schema
		}
	}
	return nil
}

// utteranceSchema is the draft and the speak tool's arguments: the words
// first — everything before the first sentence is on the way to the first
// audio (issue 40) — then the emotion (the body shows it once written:
// protocol.SpeakMore.Emotion), then the addressees (only the Message needs
// them, once the words are complete).
func utteranceSchema(lang string) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": Properties{
			{"message", map[string]any{"type": "string", "description": "what you say, in character"}},
			{"emotion", map[string]any{"type": "string", "enum": emotionEnum}},
			{"to", map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": prompts.TextsFor(lang).SpeakTo}},
		},
		"required":             []any{"message", "emotion", "to"},
		"additionalProperties": false,
	}
}

// StateSchema is the JSON Schema of the state answer, with or without the
// draft (whose descriptions are in lang). Its properties are listed vote
// first — state, importance, closing — then the draft. The State's
// selected is not asked of the model: brain.Addressed decides it, and the
// vote is shorter by it (issue 40).
func StateSchema(draft bool, lang string) map[string]any {
	return StateSchemaWith(draft, lang, brain.Events{})
}

// StateSchemaWith is StateSchema with the card's events: when it has
// params, an events object (EventsSchema) comes after closing and before
// the draft, so that the vote is still written first (issue 29).
func StateSchemaWith(draft bool, lang string, events brain.Events) map[string]any {
	props := Properties{
		{"state", map[string]any{"type": "string", "enum": speechEnum}},
		{"importance", map[string]any{"type": "number", "minimum": 0, "maximum": 10, "description": "0 to 10"}},
		{"closing", map[string]any{"type": "string", "enum": closingEnum}},
	}
	req := []any{"state", "importance", "closing"}
	if events.Has() {
		props = append(props, Property{"events", EventsSchema(events)})
		req = append(req, "events")
	}
	if draft {
		props = append(props, Property{"draft", utteranceSchema(lang)})
		req = append(req, "draft")
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// EventsSchema is the card's params as the model is asked for them: an
// object of the declared properties (type, description, enum, bounds),
// in name order, all required, nothing else.
func EventsSchema(e brain.Events) map[string]any {
	var props Properties
	var req []any
	for _, name := range e.ParamNames() {
		p := map[string]any{}
		for _, k := range []string{"type", "description", "enum", "minimum", "maximum"} {
			if v, ok := e.Param(name)[k]; ok {
				p[k] = v
			}
		}
		props = append(props, Property{name, p})
		req = append(req, name)
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// SpeakTool and VisionTool are the tools offered to the model, described
// in the card's language (aikyo-query.ja.md).
func SpeakTool(lang string) ToolDef {
	return ToolDef{Name: "speak", Description: prompts.TextsFor(lang).SpeakTool, Parameters: utteranceSchema(lang)}
}

func VisionTool(lang string) ToolDef {
	return ToolDef{Name: "vision", Description: prompts.TextsFor(lang).VisionTool,
		Parameters: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}}
}

func (b *Brain) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

// Think implements brain.Brain: one call for the State and the draft, in
// which the model may also call the body's actions to go with the words.
func (b *Brain) Think(ctx context.Context, in brain.Input) (brain.Thought, error) {
	return b.ThinkStream(ctx, in, brain.Heard{})
}

// stateRequest is the call that asks for the State and the draft, and
// the tools it offers (with the draft only: a vote alone calls none).
func (b *Brain) stateRequest(in brain.Input) (Request, []tool.Tool) {
	sys, user := prompts.System(in), prompts.State(in, b.Draft)
	req := Request{System: sys, Turns: []Turn{{Role: User, Text: user}}, Schema: StateSchemaWith(b.Draft, in.Card.Language, in.Card.Events), SchemaName: StateSchemaName}
	var tools []tool.Tool
	if b.Draft {
		tools, req.Tools = b.toolbox(in, in.Tools, true)
	}
	return req, tools
}

// StateSchemaName names the state answer's structured output.
const StateSchemaName = "companion_state"

// MaxTurnActions bounds the actions one turn's words take: a model that
// calls more has the rest dropped.
const MaxTurnActions = 4

// bound keeps what the model said within the limits: at most MaxUtterance
// characters, cut at a sentence boundary, addressed to the room only.
func (b *Brain) bound(u brain.Utterance, in brain.Input) brain.Utterance {
	max := b.maxUtterance()
	if text, cut := sentence.Clip(u.Text, max); cut {
		metrics.OrNew(b.Metrics).Clipped.Inc()
		b.log().Info("the model's utterance was longer than brain.max_utterance; cut at a sentence boundary",
			"characters", utf8.RuneCountInString(u.Text), "max", max, "kept", utf8.RuneCountInString(text))
		u.Text = text
	}
	u.To = addressees(u.To, in)
	return u
}

func (b *Brain) maxUtterance() int {
	if b.MaxUtterance <= 0 {
		return DefaultMaxUtterance
	}
	return b.MaxUtterance
}

// addressees keeps those of to who are in the room: its members, and
// whoever spoke in the conversation (a user). A model cannot address, or
// make others believe it addressed, someone who is not there.
func addressees(to []string, in brain.Input) []string {
	ok := map[string]bool{in.Message.Params.From: true}
	for _, m := range in.Members {
		ok[m] = true
	}
	for _, m := range in.Present {
		ok[m] = true
	}
	for _, h := range in.History {
		ok[h.Params.From] = true
	}
	delete(ok, in.Card.ID)
	var out []string
	for _, id := range to {
		if ok[id] && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Utter implements brain.Brain: the two-call path's second call, which must
// end in the speak tool.
func (b *Brain) Utter(ctx context.Context, in brain.Input) (brain.Utterance, error) {
	sys, user := prompts.System(in), prompts.Utter(in)
	req := Request{System: sys, Turns: []Turn{{Role: User, Text: user}}, Tools: []ToolDef{SpeakTool(in.Card.Language)}, ForceTool: "speak"}
	tools, defs := b.toolbox(in, in.Tools, true)
	if len(tools) > 0 {
		req.Tools = append(req.Tools, defs...)
		req.ForceTool = "" // it may look, gesture or look things up first; the prompt asks for speak
	}
	var r ran
	resp, err := b.run(ctx, in, req, tools, nil, &r)
	if err != nil {
		return brain.Utterance{}, err
	}
	acts := r.acts
	for _, c := range resp.ToolCalls {
		if c.Name == "speak" {
			u, err := ParseUtterance(c.Args)
			if err != nil {
				return brain.Utterance{}, err
			}
			u = b.bound(u, in)
			u.Actions = acts
			return u, nil
		}
	}
	if strings.TrimSpace(resp.Text) != "" { // a model that answered in plain text
		u := b.bound(brain.Utterance{Text: strings.TrimSpace(resp.Text), Emotion: protocol.EmotionNeutral}, in)
		u.Actions = acts
		return u, nil
	}
	return brain.Utterance{}, errors.New("llm: the model did not call speak")
}

// repetitionSchema is the judge's answer: one score.
func repetitionSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"score": map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "0 to 1"},
		},
		"required":             []any{"score"},
		"additionalProperties": false,
	}
}

var _ brain.RepetitionJudge = (*Brain)(nil)

// JudgeRepetition implements brain.RepetitionJudge: the companion's model is
// asked (prompts.Repetition, JSON-schema output) whether window repeats
// itself. A score that is not a number from 0 to 1 is an error.
func (b *Brain) JudgeRepetition(ctx context.Context, lang string, window []protocol.Message) (float64, error) {
	user := prompts.Repetition(lang, window)
	resp, err := b.ask(ctx, Request{Turns: []Turn{{Role: User, Text: user}}, Schema: repetitionSchema(), SchemaName: "repetition_judge"}, nil)
	switch {
	case err != nil:
		return 0, fmt.Errorf("llm: repetition judge: %w", err)
	case resp.Refusal != "":
		return 0, fmt.Errorf("llm: repetition judge: the model refused: %s", clip(resp.Refusal))
	case resp.Truncated:
		return 0, errors.New("llm: repetition judge: the answer was cut off at the token limit")
	}
	return ParseRepetition(resp.Text)
}

// ParseRepetition reads the judge's answer, {"score": 0..1}, strictly.
func ParseRepetition(text string) (float64, error) {
	var w struct {
		Score *float64 `json:"score"`
	}
	if err := strictJSON(text, &w); err != nil {
		return 0, fmt.Errorf("llm: repetition judge: %w", err)
	}
	switch {
	case w.Score == nil:
		return 0, errors.New("llm: repetition judge: score is missing")
	case *w.Score < 0 || *w.Score > 1:
		return 0, fmt.Errorf("llm: repetition judge: score must be from 0 to 1, got %v", *w.Score)
	}
	return *w.Score, nil
}

// Talk implements the realtime mode's talk (runtime/realtime) with the
// seed's talk_realtime prompt: free text, LISTEN or Over. The body's
// actions are offered as tools in the same call, as in Think; they go
// with words only.
func (b *Brain) Talk(ctx context.Context, in brain.TalkInput) (brain.Utterance, error) {
	sys := prompts.System(brain.Input{Card: in.Card, Present: in.Members, Remaining: in.Remaining})
	user := prompts.Talk(in)
	// Tools that act are not offered: every robot of a realtime room
	// talks when it likes, and a tool must be run once.
	ts := slices.DeleteFunc(slices.Clone(in.Tools), func(t tool.Tool) bool { return t.Kind == tool.Acts })
	tools, defs := b.toolbox(brain.Input{Card: in.Card}, ts, false)
	req := Request{System: sys, Turns: []Turn{{Role: User, Text: user}}, Tools: defs}
	var r ran
	resp, err := b.run(ctx, brain.Input{Card: in.Card, Tools: ts}, req, tools, nil, &r)
	if err != nil {
		return brain.Utterance{}, err
	}
	acts := r.acts
	said, err := ParseTalk(resp.Text, in.Card)
	if err != nil || said == protocol.TalkListen || said == protocol.PostOver {
		return brain.Utterance{Text: said}, err
	}
	u := b.bound(brain.Utterance{Text: said}, brain.Input{Card: in.Card})
	return brain.Utterance{Text: u.Text, Actions: acts}, nil
}

// ParseTalk reads a model's realtime answer: LISTEN or Over in any of the
// ways models write them (case, quotes, a full stop, Japanese brackets),
// else the words, without a "name:" label the model may echo.
func ParseTalk(text string, card brain.Card) (string, error) {
	t := strings.TrimSpace(text)
	for _, label := range []string{card.ID + ":", card.Name + ":", card.ID + "：", card.Name + "："} {
		if label != ":" && label != "：" {
			t = strings.TrimSpace(strings.TrimPrefix(t, label))
		}
	}
	bare := strings.Trim(t, " \t\n\"'`「」『』.。!！*")
	switch {
	case strings.EqualFold(bare, protocol.TalkListen):
		return protocol.TalkListen, nil
	case strings.EqualFold(bare, protocol.PostOver):
		return protocol.PostOver, nil
	case bare == "":
		return "", errors.New("llm: the model said nothing (want words, LISTEN or Over)")
	case !utf8.ValidString(t):
		return "", errors.New("llm: the answer is not valid UTF-8")
	}
	return t, nil
}

// run calls the model, runs the tools it calls, and calls again, up to
// Rounds times. tools are what req offers beside speak, each run as its
// kind says (runtime/tool): a speak call ends the loop (its arguments
// are the answer); a body action (tool.WithWords) is collected, not run
// — the body does it when the words are spoken; a response with actions
// and its answer ends the loop, one with actions alone is told they will
// be done and asked again for its answer; any other tool is run and its
// answer given to the model. listen, when set, gives each round's text
// a hearer.
//
// Tools that act (tool.Acts): a call that votes (voting) asks for them
// without running them (ran.deferred, answered ToolDeferred); otherwise
// the turn is granted, and the calls its vote asked for (in.Calls) run
// first, as if the model had just made them. The calls run in one call
// are bounded by Brain.ToolBudget (the brain's camera is not counted: a
// look has its own bounds, as before there were other tools).
func (b *Brain) run(ctx context.Context, in brain.Input, req Request, tools []tool.Tool, listen func() func(string), out *ran) (Response, error) {
	rounds := b.Rounds
	if rounds <= 0 {
		rounds = 3
	}
	offered := map[string]tool.Tool{}
	for _, t := range tools {
		offered[t.Name] = t
	}
	speaks := slices.ContainsFunc(req.Tools, func(d ToolDef) bool { return d.Name == "speak" })
	if out == nil {
		out = &ran{}
	}
	voting := out.voting
	budget := b.toolBudget()
	ran := map[string]string{} // the answers of the calls of tools that act run so far, by name and arguments
	answer := func(c ToolCall) string {
		say := prompts.TextsFor(in.Card.Language)
		t := offered[c.Name]
		switch {
		case t.Kind == tool.WithWords:
			return say.ActionQueued
		case t.Kind == tool.Acts && voting:
			out.deferred = append(out.deferred, tool.Call{Name: c.Name, Args: c.Args})
			return say.ToolDeferred
		case budget == 0 && t.Name != VisionName: // the camera has its own bounds
			metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("tool_budget").Inc()
			b.log().Info("a tool call past the turn's budget; not run", "tool", c.Name, "budget", b.toolBudget())
			return say.ToolBudget
		}
		key := c.Name + "\x00" + compactJSON(c.Args)
		if said, ok := ran[key]; ok && t.Kind == tool.Acts {
			return said // the same call again in one turn: done once (its answer stands)
		}
		if t.Name != VisionName {
			budget--
		}
		said := b.know(ctx, in.Card.Language, t, tool.Call{Name: c.Name, Args: c.Args, Caller: in.Message.Params.From})
		if t.Kind == tool.Acts {
			ran[key] = said
		}
		return said
	}
	if !voting { // granted: what the vote asked for, and its card's condition, run first
		var granted []ToolCall
		for i, c := range in.Calls {
			if _, ok := offered[c.Name]; !ok {
				metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("tool_missing").Inc()
				b.log().Warn("a tool the turn was to run is not offered here; not run", "tool", c.Name)
				continue
			}
			granted = append(granted, ToolCall{ID: fmt.Sprintf("granted_%d", i), Name: c.Name, Args: c.Args})
		}
		if len(granted) > 0 {
			req.Turns = append(req.Turns, Turn{Role: Assistant, ToolCalls: granted})
			for _, c := range granted {
				if offered[c.Name].Kind == tool.WithWords {
					out.acts = b.action(out.acts, c)
				}
				req.Turns = append(req.Turns, Turn{Role: Tool, ToolCallID: c.ID, ToolName: c.Name, Text: answer(c)})
			}
		}
	}
	for range rounds {
		var text func(string)
		if listen != nil {
			text = listen()
		}
		resp, err := b.ask(ctx, req, text)
		if err != nil {
			return Response{}, err
		}
		switch {
		case resp.Refusal != "":
			return Response{}, fmt.Errorf("llm: the model refused: %s", clip(resp.Refusal))
		case resp.Truncated:
			return Response{}, errors.New("llm: the answer was cut off at the token limit")
		}
		var called []ToolCall // calls answered with a tool turn
		spoke, asked := false, false
		for _, c := range resp.ToolCalls {
			t, ok := offered[c.Name]
			switch {
			case c.Name == "speak" && speaks:
				spoke = true
			case !ok:
				return Response{}, fmt.Errorf("llm: the model called an unknown tool %q", clip(c.Name))
			case t.Kind == tool.WithWords:
				called = append(called, c)
				out.acts = b.action(out.acts, c)
			default:
				called = append(called, c)
				asked = true
			}
		}
		if spoke || len(called) == 0 || (strings.TrimSpace(resp.Text) != "" && !asked) {
			return resp, nil
		}
		req.Turns = append(req.Turns, Turn{Role: Assistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		for _, c := range called {
			req.Turns = append(req.Turns, Turn{Role: Tool, ToolCallID: c.ID, ToolName: c.Name, Text: answer(c)})
		}
		req.ForceTool = ""
	}
	return Response{}, fmt.Errorf("llm: still calling tools after %d rounds", rounds)
}

// compactJSON is raw without its insignificant spaces (raw itself when it
// is not JSON): two calls with the same arguments have the same key.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ran is how run runs tools (voting: the call votes) and what its tool
// calls leave for the turn: the body's actions to do with the words, and
// the calls of tools that act the vote asked for. run fills it in as the
// rounds go, so a listener of the rounds sees the calls asked for so far.
type ran struct {
	voting   bool
	acts     []protocol.ActionRequest
	deferred []tool.Call
}

// DefaultToolBudget bounds the knowledge and tool calls one model call
// runs (Brain.ToolBudget; tools.per_turn).
const DefaultToolBudget = 4

func (b *Brain) toolBudget() int {
	if b.ToolBudget <= 0 {
		return DefaultToolBudget
	}
	return b.ToolBudget
}

// ask calls the model: streamed when its provider streams (a stall is
// cut at the idle limit, a cancel closes the request at once; text hears
// the answer as it is written), else whole.
func (b *Brain) ask(ctx context.Context, req Request, text func(string)) (Response, error) {
	if s, ok := b.Chat.(Streamer); ok && !b.Whole {
		return s.ChatStream(ctx, req, text)
	}
	return b.Chat.Chat(ctx, req)
}

// action adds the model's call c of a body action to acts: its arguments
// must be a JSON object (the body checks them against the schema), and a
// turn takes at most MaxTurnActions. An action called again takes the
// place of its earlier call: on the body the newer would end the older at
// once, and the body's queries run side by side, so which came last would
// be chance; the model's last call wins.
func (b *Brain) action(acts []protocol.ActionRequest, c ToolCall) []protocol.ActionRequest {
	r := protocol.ActionRequest{Name: c.Name, Args: c.Args}
	err := r.Validate()
	if i := slices.IndexFunc(acts, func(a protocol.ActionRequest) bool { return a.Name == r.Name }); i >= 0 && err == nil {
		acts[i] = r
		return acts
	}
	switch {
	case err != nil:
		b.log().Warn("the model called an action with bad arguments; not done", "action", c.Name, "err", err)
		metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("bad_action").Inc()
		return acts
	case len(acts) >= MaxTurnActions:
		b.log().Debug("the model called more actions than a turn takes; the rest are dropped", "action", c.Name, "max", MaxTurnActions)
		return acts
	}
	return append(acts, r)
}

// see runs the vision tool: a picture from the device, described by the
// model. Failures become the tool's answer, in the card's language
// (prompts.Texts), so the turn goes on.
func (b *Brain) see(ctx context.Context, in brain.Input) string {
	say := prompts.TextsFor(in.Card.Language)
	if b.Look == nil {
		return say.NoCamera
	}
	img, err := b.Look(ctx)
	if err != nil {
		b.log().Warn("vision tool: no picture", "err", err)
		return say.NoPicture + err.Error()
	}
	if img.Base64 == "" {
		b.log().Warn("vision tool: the picture is empty")
		return say.Empty
	}
	instr := prompts.Vision(in.Card.Language)
	resp, err := b.ask(ctx, Request{Turns: []Turn{{Role: User, Text: instr, Image: &img}}}, nil)
	if err != nil {
		if errors.Is(err, ErrNoImages) {
			b.log().Error("vision tool: this model does not accept images; the turn goes on without vision", "err", err)
			return say.NoImages + err.Error()
		} else {
			b.log().Warn("vision tool: description failed", "err", err)
		}
		return say.NoDescribe + err.Error()
	}
	return resp.Text
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

type draftWire struct {
	Message string   `json:"message"`
	To      []string `json:"to"`
	Emotion string   `json:"emotion"`
}

type stateWire struct {
	State      *string         `json:"state"`
	Importance *float64        `json:"importance"`
	Selected   *bool           `json:"selected"` // optional: a model that still writes it
	Closing    *string         `json:"closing"`
	Events     json.RawMessage `json:"events"`
	Draft      *draftWire      `json:"draft"`
}

func strictJSON(s string, v any) error {
	s = strings.TrimSpace(s)
	// Some local servers wrap JSON in a code fence even in JSON mode.
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// ParseThought checks a state answer. Its events, when the answer has
// them as an object, are in Thought.Events as written (unchecked: the
// brain checks them against the card, and drops what does not fit; an
// events field never fails an answer).
func ParseThought(text string, draft bool) (brain.Thought, error) {
	t, raw, err := parseState(text, draft)
	if err == nil && len(raw) > 0 {
		var ev map[string]any
		if json.Unmarshal(raw, &ev) == nil {
			t.Events = ev
		}
	}
	return t, err
}

// parseState is ParseThought, with the answer's events as written.
func parseState(text string, draft bool) (brain.Thought, json.RawMessage, error) {
	var w stateWire
	if err := strictJSON(text, &w); err != nil {
		return brain.Thought{}, nil, fmt.Errorf("llm: state answer is not the JSON asked for: %w (got %q)", err, clip(text))
	}
	var problems []string
	t := brain.Thought{Closing: protocol.ClosingNone, Emotion: protocol.EmotionNeutral}
	switch {
	case w.State == nil:
		problems = append(problems, "state missing")
	case *w.State != "speak" && *w.State != "listen":
		problems = append(problems, fmt.Sprintf("state %q is not speak or listen", *w.State))
	default:
		t.State = protocol.Speech(*w.State)
	}
	switch {
	case w.Importance == nil:
		problems = append(problems, "importance missing")
	case *w.Importance < 0 || *w.Importance > 10:
		problems = append(problems, fmt.Sprintf("importance %v is outside 0..10", *w.Importance))
	default:
		t.Importance = *w.Importance
	}
	if w.Selected != nil { // not asked for (brain.Addressed decides), taken when given
		t.Selected = *w.Selected
	}
	if w.Closing != nil {
		if !protocol.Closing(*w.Closing).Valid() {
			problems = append(problems, fmt.Sprintf("closing %q is not none, pre-closing, closing or terminal", *w.Closing))
		} else {
			t.Closing = protocol.Closing(*w.Closing)
		}
	}
	if draft {
		if w.Draft == nil {
			problems = append(problems, "draft missing")
		} else if u, err := checkUtterance(*w.Draft); err != nil {
			if t.State == protocol.Speak {
				problems = append(problems, "draft: "+err.Error())
			}
		} else {
			t.Draft, t.Emotion, t.To = u.Text, u.Emotion, u.To
		}
	}
	if len(problems) > 0 {
		return brain.Thought{}, nil, fmt.Errorf("llm: bad state answer: %s", strings.Join(problems, "; "))
	}
	return t, w.Events, nil
}

// ParseUtterance checks the arguments of a speak call.
func ParseUtterance(args json.RawMessage) (brain.Utterance, error) {
	var w draftWire
	if err := strictJSON(string(args), &w); err != nil {
		return brain.Utterance{}, fmt.Errorf("llm: speak arguments are not the JSON asked for: %w", err)
	}
	u, err := checkUtterance(w)
	if err != nil {
		return brain.Utterance{}, fmt.Errorf("llm: speak: %w", err)
	}
	return u, nil
}

func checkUtterance(w draftWire) (brain.Utterance, error) {
	text := strings.TrimSpace(w.Message)
	if text == "" {
		return brain.Utterance{}, errors.New("empty utterance")
	}
	e := protocol.Emotion(w.Emotion)
	if w.Emotion == "" {
		e = protocol.EmotionNeutral
	}
	if !e.Valid() {
		return brain.Utterance{}, fmt.Errorf("emotion %q is not neutral, happy, sad or angry", w.Emotion)
	}
	var to []string
	for _, id := range w.To {
		if protocol.ValidIdentity(id) == "" {
			to = append(to, id)
		}
	}
	return brain.Utterance{Text: text, Emotion: e, To: to}, nil
}
