package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// Default payload caps. A cap of 0 passed to a decoder means the default.
const (
	DefaultMaxBytes       = 64 << 10 // messages, states, grants, presence, realtime
	DefaultMaxResultBytes = 8 << 20  // query results carry camera frames
	MaxIDLen              = 128      // message and query ids
	MaxIdentityLen        = 64       // companion, device, floor and room names
)

// ValidIdentity reports why s cannot be a companion, device, room or floor
// identity, or "" when it can. Identities are MQTT topic segments, so they
// must not contain '/', '+', '#', spaces or control characters.
func ValidIdentity(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > MaxIdentityLen:
		return "must be at most 64 bytes"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.ContainsAny(s, "/+#$"):
		return "must not contain '/', '+', '#' or '$'"
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "must not contain spaces or control characters"
		}
	}
	return ""
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields, trailing data and payloads over max bytes.
func decodeStrict(typ string, b []byte, max int, v any) error {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if len(b) > max {
		return fieldErr(typ, "", KindOversize, "payload is %d bytes, cap is %d", len(b), max)
	}
	// segmentio's decoder is encoding/json's semantics at five times the
	// speed (a 50-vote grant: 19 µs instead of 104 µs), which matters when
	// every companion decodes every grant. Field names match exactly.
	rest, err := segjson.Parse(b, v, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return jsonErr(typ, b, err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return fieldErr(typ, "", KindSyntax, "trailing data after the JSON value")
	}
	return nil
}

// checker collects the first validation failure of a payload.
type checker struct {
	typ string
	err *Error
}

func (c *checker) fail(field string, kind Kind, format string, args ...any) {
	if c.err == nil {
		c.err = fieldErr(c.typ, field, kind, format, args...)
	}
}

func (c *checker) literal(field, got, want string) {
	if got == "" {
		c.fail(field, KindMissing, "required, must be %q", want)
	} else if got != want {
		c.fail(field, KindInvalid, "must be %q, got %q", want, got)
	}
}

func (c *checker) id(field, s string) {
	switch {
	case s == "":
		c.fail(field, KindMissing, "required and must not be empty")
	case len(s) > MaxIDLen:
		c.fail(field, KindInvalid, "must be at most %d bytes", MaxIDLen)
	case !utf8.ValidString(s):
		c.fail(field, KindInvalid, "must be valid UTF-8")
	}
}

func (c *checker) identity(field, s string) {
	if s == "" {
		c.fail(field, KindMissing, "required and must not be empty")
	} else if why := ValidIdentity(s); why != "" {
		c.fail(field, KindInvalid, "%s", why)
	}
}

func (c *checker) object(field string, raw json.RawMessage, required bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		if required {
			c.fail(field, KindMissing, "required, must be an object")
		}
		return
	}
	if t[0] != '{' {
		c.fail(field, KindInvalid, "must be an object")
	}
}

func (c *checker) nonNegative(field string, n int) {
	if n < 0 {
		c.fail(field, KindInvalid, "must not be negative, got %d", n)
	}
}

func (c *checker) done() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// DecodeMessage decodes and validates a message.send payload.
func DecodeMessage(b []byte, max int) (Message, error) {
	var m Message
	// The decoder fills a map it is given; one it makes itself starts with
	// room for 64 keys (5 KB a message, the largest garbage of a realtime
	// room, where every player decodes every broadcast). Metadata holds a
	// handful of keys.
	m.Params.Metadata = make(map[string]any, 8)
	if err := decodeStrict("message", b, max, &m); err != nil {
		return Message{}, err
	}
	if m.Params.To == nil {
		// Absent (aikyo's English schema allows it) or null: re-emitted
		// as [], since aikyo's MessageSchema (z.array) refuses null.
		m.Params.To = []string{}
	}
	return m, m.Validate()
}

// Validate checks a Message as DecodeMessage does.
func (m Message) Validate() error {
	c := checker{typ: "message"}
	c.literal("jsonrpc", m.JSONRPC, JSONRPC)
	c.literal("method", m.Method, MethodMessage)
	c.id("params.id", m.Params.ID)
	c.identity("params.from", m.Params.From)
	for i, to := range m.Params.To {
		if why := ValidIdentity(to); why != "" {
			c.fail("params.to["+itoa(i)+"]", KindInvalid, "%s", why)
		}
	}
	if !utf8.ValidString(m.Params.Message) {
		c.fail("params.message", KindInvalid, "must be valid UTF-8")
	}
	if e, ok := m.Params.Metadata["emotion"]; ok {
		if s, isStr := e.(string); !isStr || !Emotion(s).Valid() {
			c.fail("params.metadata.emotion", KindInvalid, "must be one of neutral, happy, sad, angry, got %v", e)
		}
	}
	return c.done()
}

// stateWire mirrors State with pointers, to tell absent from zero.
type stateWire struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  *struct {
		ID         *string  `json:"id"`
		From       string   `json:"from"`
		MessageID  string   `json:"messageId"`
		State      Speech   `json:"state"`
		Importance *float64 `json:"importance"`
		Selected   *bool    `json:"selected"`
		Closing    *Closing `json:"closing"`
	} `json:"params"`
}

// DecodeState decodes and validates a state.send payload. An absent
// "closing" becomes ClosingNone; "id" may be absent.
func DecodeState(b []byte, max int) (State, error) {
	var w stateWire
	if err := decodeStrict("state", b, max, &w); err != nil {
		return State{}, err
	}
	c := checker{typ: "state"}
	c.literal("jsonrpc", w.JSONRPC, JSONRPC)
	c.literal("method", w.Method, MethodState)
	if w.Params == nil {
		c.fail("params", KindMissing, "required, must be an object")
		return State{}, c.done()
	}
	p := w.Params
	s := State{JSONRPC: w.JSONRPC, Method: w.Method, Params: StateParams{From: p.From, MessageID: p.MessageID, State: p.State, Closing: ClosingNone}}
	if p.ID != nil {
		c.id("params.id", *p.ID)
		s.Params.ID = *p.ID
	}
	c.identity("params.from", p.From)
	c.id("params.messageId", p.MessageID)
	switch p.State {
	case Speak, Listen:
	case "":
		c.fail("params.state", KindMissing, `required, must be "speak" or "listen"`)
	default:
		c.fail("params.state", KindInvalid, `must be "speak" or "listen", got %q`, p.State)
	}
	if p.Importance == nil {
		c.fail("params.importance", KindMissing, "required, a number from 0 to 10")
	} else if *p.Importance < MinImportance || *p.Importance > MaxImportance {
		c.fail("params.importance", KindInvalid, "must be from 0 to 10, got %v", *p.Importance)
	} else {
		s.Params.Importance = *p.Importance
	}
	if p.Selected == nil {
		c.fail("params.selected", KindMissing, "required, a boolean")
	} else {
		s.Params.Selected = *p.Selected
	}
	if p.Closing != nil {
		if !p.Closing.Valid() {
			c.fail("params.closing", KindInvalid, `must be one of none, pre-closing, closing, terminal, got %q`, *p.Closing)
		}
		s.Params.Closing = *p.Closing
	}
	if err := c.done(); err != nil {
		return State{}, err
	}
	return s, nil
}

// Validate checks a State as DecodeState does (for states built in code).
func (s State) Validate() error {
	b, err := json.Marshal(s)
	if err != nil {
		return fieldErr("state", "", KindInvalid, "%v", err)
	}
	_, err = DecodeState(b, 0)
	return err
}

var grantReasons = map[string]bool{ReasonSelected: true, ReasonSpeak: true, ReasonRest: true, ReasonExpired: true, ReasonHeld: true}
var decidedBy = map[string]bool{DecidedAllVoted: true, DecidedDeadline: true, DecidedEvicted: true, DecidedSettled: true, DecidedRetracted: true}

// grantWire mirrors TurnGrant with pointers, to tell absent from null in
// one decoding pass.
type grantWire struct {
	From      string          `json:"from"`
	MessageID string          `json:"messageId"`
	Speaker   json.RawMessage `json:"speaker"`
	Reason    string          `json:"reason"`
	DecidedBy string          `json:"decidedBy"`
	Votes     *[]Vote         `json:"votes"`
	Missing   []string        `json:"missing"`
}

// DecodeTurnGrant decodes and validates a TurnGrant.
func DecodeTurnGrant(b []byte, max int) (TurnGrant, error) {
	var w grantWire
	if err := decodeStrict("grant", b, max, &w); err != nil {
		return TurnGrant{}, err
	}
	g := TurnGrant{From: w.From, MessageID: w.MessageID, Reason: w.Reason, DecidedBy: w.DecidedBy, Missing: w.Missing}
	c := checker{typ: "grant"}
	c.identity("from", g.From)
	c.id("messageId", g.MessageID)
	switch sp := bytes.TrimSpace(w.Speaker); {
	case len(sp) == 0:
		c.fail("speaker", KindMissing, "required, a companion id or null")
	case bytes.Equal(sp, []byte("null")):
	default:
		var id string
		if err := json.Unmarshal(sp, &id); err != nil {
			c.fail("speaker", KindInvalid, "must be a string or null")
		} else {
			c.identity("speaker", id)
			g.Speaker = &id
		}
	}
	if w.Votes == nil {
		c.fail("votes", KindMissing, "required, an array")
	} else {
		g.Votes = *w.Votes
	}
	if !grantReasons[g.Reason] {
		c.fail("reason", KindInvalid, "must be one of selected, speak, rest, expired, held, got %q", g.Reason)
	}
	if !decidedBy[g.DecidedBy] {
		c.fail("decidedBy", KindInvalid, "must be one of all-voted, deadline, evicted, settled, got %q", g.DecidedBy)
	}
	for i, v := range g.Votes {
		f := "votes[" + itoa(i) + "]"
		c.identity(f+".from", v.From)
		if v.State != Speak && v.State != Listen {
			c.fail(f+".state", KindInvalid, `must be "speak" or "listen", got %q`, v.State)
		}
		if v.Importance < MinImportance || v.Importance > MaxImportance {
			c.fail(f+".importance", KindInvalid, "must be from 0 to 10, got %v", v.Importance)
		}
		if !v.Closing.Valid() {
			c.fail(f+".closing", KindInvalid, "must be one of none, pre-closing, closing, terminal, got %q", v.Closing)
		}
	}
	for i, m := range g.Missing {
		c.identity("missing["+itoa(i)+"]", m)
	}
	if err := c.done(); err != nil {
		return TurnGrant{}, err
	}
	return g, nil
}

// DecodePresence decodes and validates a Presence.
func DecodePresence(b []byte, max int) (Presence, error) {
	var w struct {
		Online  *bool  `json:"online"`
		Device  string `json:"device"`
		Since   string `json:"since"`
		ThinkMs int    `json:"thinkMs"`
		Hears   bool   `json:"hears"`
		Sees    bool   `json:"sees"`
	}
	if err := decodeStrict("presence", b, max, &w); err != nil {
		return Presence{}, err
	}
	c := checker{typ: "presence"}
	if w.Online == nil {
		c.fail("online", KindMissing, "required, a boolean")
	}
	c.identity("device", w.Device)
	since, err := time.Parse(time.RFC3339Nano, w.Since)
	switch {
	case w.Since == "":
		c.fail("since", KindMissing, "required, an RFC 3339 time")
	case err != nil:
		c.fail("since", KindInvalid, "must be an RFC 3339 time, got %q", w.Since)
	}
	if w.ThinkMs < 0 || w.ThinkMs > MaxThinkMs {
		c.fail("thinkMs", KindInvalid, "must be from 0 to %d, got %d", MaxThinkMs, w.ThinkMs)
	}
	if err := c.done(); err != nil {
		return Presence{}, err
	}
	return Presence{Online: *w.Online, Device: w.Device, Since: since, ThinkMs: w.ThinkMs, Hears: w.Hears, Sees: w.Sees}, nil
}

// DecodeQuery decodes and validates a query.send or query.cancel payload.
func DecodeQuery(b []byte, max int) (Query, error) {
	var q Query
	if err := decodeStrict("query", b, max, &q); err != nil {
		return Query{}, err
	}
	return q, q.Validate()
}

// Validate checks a Query as DecodeQuery does.
func (q Query) Validate() error {
	c := checker{typ: "query"}
	c.literal("jsonrpc", q.JSONRPC, JSONRPC)
	switch q.Method {
	case MethodQuery, MethodQueryCancel:
	case "":
		c.fail("method", KindMissing, `required, must be "query.send" or "query.cancel"`)
	default:
		c.fail("method", KindInvalid, `must be "query.send" or "query.cancel", got %q`, q.Method)
	}
	c.id("id", q.ID)
	c.identity("params.from", q.Params.From)
	if q.Params.Type == "" {
		c.fail("params.type", KindMissing, "required and must not be empty")
	} else if len(q.Params.Type) > MaxIdentityLen {
		c.fail("params.type", KindInvalid, "must be at most 64 bytes")
	}
	c.object("params.body", q.Params.Body, false)
	return c.done()
}

// DecodeQueryResult decodes and validates a QueryResult; max 0 means
// DefaultMaxResultBytes.
func DecodeQueryResult(b []byte, max int) (QueryResult, error) {
	if max <= 0 {
		max = DefaultMaxResultBytes
	}
	var w struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Result  *struct {
			Success *bool           `json:"success"`
			Body    json.RawMessage `json:"body"`
		} `json:"result"`
		Error *string `json:"error"`
	}
	if err := decodeStrict("result", b, max, &w); err != nil {
		return QueryResult{}, err
	}
	c := checker{typ: "result"}
	c.literal("jsonrpc", w.JSONRPC, JSONRPC)
	c.id("id", w.ID)
	r := QueryResult{JSONRPC: w.JSONRPC, ID: w.ID}
	switch {
	case w.Result == nil && w.Error == nil:
		c.fail("result", KindMissing, `one of "result" and "error" is required`)
	case w.Result != nil && w.Error != nil:
		c.fail("error", KindInvalid, `must not be set together with "result"`)
	case w.Error != nil:
		if *w.Error == "" {
			c.fail("error", KindMissing, "must not be empty")
		}
		r.Error = *w.Error
	default:
		if w.Result.Success == nil {
			c.fail("result.success", KindMissing, "required, a boolean")
		}
		c.object("result.body", w.Result.Body, true)
		if c.err == nil {
			r.Result = &ResultBody{Success: *w.Result.Success, Body: w.Result.Body}
		}
	}
	if err := c.done(); err != nil {
		return QueryResult{}, err
	}
	return r, nil
}

func (c *checker) limits(l Limits) {
	c.nonNegative("limits.rate_limit", l.RateLimitMs)
	c.nonNegative("limits.per_agent", l.PerAgent)
	c.nonNegative("limits.per_day", l.PerDay)
	c.nonNegative("limits.max_length", l.MaxLength)
	c.nonNegative("limits.phase_timeout", l.PhaseTimeoutMs)
	c.nonNegative("limits.silence_timeout", l.SilenceTimeoutMs)
}

// DecodePhase decodes and validates a realtime Phase event.
func DecodePhase(b []byte, max int) (Phase, error) {
	var p Phase
	if err := decodeStrict("phase", b, max, &p); err != nil {
		return Phase{}, err
	}
	c := checker{typ: "phase"}
	c.identity("from", p.From)
	c.id("phase", p.Phase)
	if p.Event != PhaseStart && p.Event != PhaseEnd {
		c.fail("event", KindInvalid, `must be "start" or "end", got %q`, p.Event)
	}
	if p.Kind != PhaseTalk && p.Kind != PhaseWhisper {
		c.fail("kind", KindInvalid, `must be "talk" or "whisper", got %q`, p.Kind)
	}
	if p.Kind == PhaseWhisper && p.Event == PhaseStart && len(p.Members) == 0 {
		c.fail("members", KindMissing, "a whisper phase must list its members")
	}
	for i, m := range p.Members {
		c.identity("members["+itoa(i)+"]", m)
	}
	if p.Channel != "" {
		c.identity("channel", p.Channel)
	}
	if p.Event == PhaseEnd && p.Reason == "" {
		c.fail("reason", KindMissing, "an end must say why")
	}
	for id, n := range p.Remain {
		c.identity("remain_count key", id)
		c.nonNegative("remain_count."+id, n)
	}
	for i, t := range p.History {
		c.nonNegative("talk_history["+itoa(i)+"].idx", t.Idx)
		c.identity("talk_history["+itoa(i)+"].agent", t.Agent)
		if !utf8.ValidString(t.Text) {
			c.fail("talk_history["+itoa(i)+"].text", KindInvalid, "must be valid UTF-8")
		}
	}
	c.limits(p.Limits)
	if err := c.done(); err != nil {
		return Phase{}, err
	}
	return p, nil
}

// DecodePost decodes and validates a realtime Post.
func DecodePost(b []byte, max int) (Post, error) {
	var p Post
	if err := decodeStrict("post", b, max, &p); err != nil {
		return Post{}, err
	}
	c := checker{typ: "post"}
	c.identity("from", p.From)
	c.id("phase", p.Phase)
	c.id("id", p.ID)
	if !utf8.ValidString(p.Text) {
		c.fail("text", KindInvalid, "must be valid UTF-8")
	}
	if err := c.done(); err != nil {
		return Post{}, err
	}
	return p, nil
}

// DecodePostAck decodes and validates the floor's answer to a Post.
func DecodePostAck(b []byte, max int) (PostAck, error) {
	var a PostAck
	if err := decodeStrict("postack", b, max, &a); err != nil {
		return PostAck{}, err
	}
	c := checker{typ: "postack"}
	c.identity("from", a.From)
	c.id("phase", a.Phase)
	c.id("postId", a.PostID)
	c.nonNegative("idx", a.Idx)
	c.nonNegative("remaining", a.Remaining)
	if !a.Accepted && a.Reason == "" {
		c.fail("reason", KindMissing, "a rejected post must say why")
	}
	if err := c.done(); err != nil {
		return PostAck{}, err
	}
	return a, nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// DecodeHold decodes and validates a Hold.
func DecodeHold(b []byte, max int) (Hold, error) {
	var w struct {
		From  string `json:"from"`
		Held  *bool  `json:"held"`
		Since string `json:"since"`
	}
	if err := decodeStrict("hold", b, max, &w); err != nil {
		return Hold{}, err
	}
	c := checker{typ: "hold"}
	c.identity("from", w.From)
	if w.Held == nil {
		c.fail("held", KindMissing, "required, a boolean")
	}
	since, err := time.Parse(time.RFC3339Nano, w.Since)
	if err != nil {
		c.fail("since", KindInvalid, "must be an RFC 3339 time, got %q", w.Since)
	}
	if err := c.done(); err != nil {
		return Hold{}, err
	}
	return Hold{From: w.From, Held: *w.Held, Since: since}, nil
}

// DecodeSpeaking decodes and validates a speaking status.
func DecodeSpeaking(b []byte, max int) (Speaking, error) {
	var w struct {
		MessageID  string `json:"messageId"`
		Speaking   *bool  `json:"speaking"`
		StartedAt  string `json:"startedAt"`
		DurationMs *int   `json:"durationMs"`
	}
	if err := decodeStrict("speaking", b, max, &w); err != nil {
		return Speaking{}, err
	}
	c := checker{typ: "speaking"}
	c.id("messageId", w.MessageID)
	if w.Speaking == nil {
		c.fail("speaking", KindMissing, "required, a boolean")
	}
	started, err := time.Parse(time.RFC3339Nano, w.StartedAt)
	switch {
	case w.StartedAt == "":
		c.fail("startedAt", KindMissing, "required, an RFC 3339 time")
	case err != nil:
		c.fail("startedAt", KindInvalid, "must be an RFC 3339 time, got %q", w.StartedAt)
	}
	switch {
	case w.DurationMs == nil:
		c.fail("durationMs", KindMissing, "required, milliseconds")
	case *w.DurationMs < 0 || *w.DurationMs > MaxSpeakingMs:
		c.fail("durationMs", KindInvalid, "must be from 0 to %d, got %d", MaxSpeakingMs, *w.DurationMs)
	}
	if err := c.done(); err != nil {
		return Speaking{}, err
	}
	return Speaking{MessageID: w.MessageID, Speaking: *w.Speaking, StartedAt: started, DurationMs: *w.DurationMs}, nil
}

// QueryIDOf reads the top-level "id" of a query that failed to decode —
// oversize, or invalid in some other field — so that the device can still
// answer it with an error result and the asker need not wait out its
// timeout. It returns "" when the payload is not a JSON object or its id is
// missing or not a valid id. Unknown fields and the other fields' types are
// ignored; the whole payload is scanned once.
func QueryIDOf(b []byte) string {
	var w struct {
		ID string `json:"id"`
	}
	if _, err := segjson.Parse(b, &w, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return ""
	}
	c := checker{typ: "query"}
	c.id("id", w.ID)
	if c.err != nil {
		return ""
	}
	return w.ID
}
