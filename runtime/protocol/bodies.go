package protocol

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"
)

// The bodies of the queries a companion asks its body (docs/protocol.md,
// "Queries") and of their results, each declared once here: the device
// decodes the request with these decoders, the asker the result.

// Query types (QueryParams.Type).
const (
	TypeSpeak      = "speak"       // SpeakRequest → SpeakResult
	TypeSpeakStart = "speak.start" // SpeakStart → SpeakStartResult
	TypeSpeakStop  = "speak.stop"  // SpeakStop → SpeakStopResult
	TypeSpeakMore  = "speak.more"  // SpeakMore → SpeakMoreResult
	TypeVision     = "vision"      // no body (or VisionRequest) → VisionResult
	TypePhase      = "phase"       // PhaseCommand → PhaseCommand (the floor's device)
	TypeCancel     = "cancel"      // query.cancel's type; its body is {"id": query id}
)

// MaxHoldLen bounds a speak's hold token (bytes).
const MaxHoldLen = 64

// BargeIn is what a user's Message does to a companion that speaks.
type BargeIn string

// Barge-in modes; sentence and immediate are also where a speak.stop stops.
const (
	BargeInSentence  BargeIn = "sentence"  // stop after the sentence being spoken
	BargeInImmediate BargeIn = "immediate" // stop at once
	BargeInOff       BargeIn = "off"       // speak on
)

// Valid reports whether b is one of the three modes.
func (b BargeIn) Valid() bool {
	return b == BargeInSentence || b == BargeInImmediate || b == BargeInOff
}

// SpeakRequest is the body of a speak query: the words (and their tone) to
// say. Hold, when set, makes the device prepare the utterance (synthesize
// its first sentence) and wait for a speak.start naming the same token
// before it plays: the next robot gets ready while the one before it still
// talks, and starts the moment it ends (overlapped turns). MessageID names
// the Message these words are (file-backed outputs name the utterance after
// it).
//
// More says the speak is still being written (a streamed answer, issue 28):
// its words so far are Message, and speak.more queries (SpeakMore) naming
// the same MessageID, which More therefore requires, append the rest. The
// speak starts as usual, held or not, on its first words; see SpeakMore for
// when its one result comes. A body that does not know speak.more is never
// sent a speak with More: its companion sends it the whole text in one
// speak, as before.
type SpeakRequest struct {
	Message   string  `json:"message"`
	Emotion   Emotion `json:"emotion,omitempty"`
	Hold      string  `json:"hold,omitempty"`
	MessageID string  `json:"messageId,omitempty"`
	More      bool    `json:"more,omitempty"`
}

// Validate checks a SpeakRequest as DecodeSpeakRequest does. How many
// characters a device speaks at most is the device's own limit.
func (r SpeakRequest) Validate() error {
	c := checker{typ: "speak"}
	switch {
	case !utf8.ValidString(r.Message):
		c.fail("message", KindInvalid, "must be valid UTF-8")
	case strings.TrimSpace(r.Message) == "":
		c.fail("message", KindMissing, "required, the words to say")
	}
	if r.Emotion != "" && !r.Emotion.Valid() {
		c.fail("emotion", KindInvalid, "must be one of neutral, happy, sad, angry, got %q", r.Emotion)
	}
	c.token("hold", r.Hold, false)
	if r.MessageID != "" {
		c.id("messageId", r.MessageID)
	} else if r.More {
		c.fail("messageId", KindMissing, "required with more, the speak that speak.more appends to")
	}
	return c.done()
}

// DecodeSpeakRequest decodes and validates a speak query's body.
func DecodeSpeakRequest(b []byte, max int) (SpeakRequest, error) {
	var r SpeakRequest
	if err := decodeBody("speak", b, max, &r); err != nil {
		return SpeakRequest{}, err
	}
	if err := r.Validate(); err != nil {
		return SpeakRequest{}, err
	}
	return r, nil
}

// SpeakResult is the body of a speak result. StartedAt is when the first
// sample played; Stopped says a speak.stop ended it early. Every field is
// optional: aikyo's bodies answer a speak with {}.
type SpeakResult struct {
	DurationMs   int64     `json:"durationMs"`
	Sentences    int       `json:"sentences"`
	FirstAudioMs int64     `json:"firstAudioMs"`
	Engine       string    `json:"engine"`
	StartedAt    time.Time `json:"startedAt,omitzero"`
	Stopped      bool      `json:"stopped,omitempty"`
}

// DecodeSpeakResult decodes and validates a speak result's body.
func DecodeSpeakResult(b []byte, max int) (SpeakResult, error) {
	var w struct {
		DurationMs   int64  `json:"durationMs"`
		Sentences    int    `json:"sentences"`
		FirstAudioMs int64  `json:"firstAudioMs"`
		Engine       string `json:"engine"`
		StartedAt    string `json:"startedAt"`
		Stopped      bool   `json:"stopped"`
	}
	if err := decodeBody("speak-result", b, max, &w); err != nil {
		return SpeakResult{}, err
	}
	c := checker{typ: "speak-result"}
	c.millis("durationMs", w.DurationMs)
	c.millis("firstAudioMs", w.FirstAudioMs)
	c.nonNegative("sentences", w.Sentences)
	if len(w.Engine) > MaxIdentityLen || !utf8.ValidString(w.Engine) {
		c.fail("engine", KindInvalid, "must be valid UTF-8 of at most %d bytes", MaxIdentityLen)
	}
	started := c.time("startedAt", w.StartedAt, false)
	if err := c.done(); err != nil {
		return SpeakResult{}, err
	}
	return SpeakResult{DurationMs: w.DurationMs, Sentences: w.Sentences, FirstAudioMs: w.FirstAudioMs, Engine: w.Engine,
		StartedAt: started, Stopped: w.Stopped}, nil
}

// SpeakStart is the body of a speak.start query: it starts the held speak
// with that token.
type SpeakStart struct {
	Hold string `json:"hold"`
}

// DecodeSpeakStart decodes and validates a speak.start query's body.
func DecodeSpeakStart(b []byte, max int) (SpeakStart, error) {
	var s SpeakStart
	if err := decodeBody("speak-start", b, max, &s); err != nil {
		return SpeakStart{}, err
	}
	c := checker{typ: "speak-start"}
	c.token("hold", s.Hold, true)
	if err := c.done(); err != nil {
		return SpeakStart{}, err
	}
	return s, nil
}

// SpeakStartResult answers a speak.start: whether a held speak was waiting
// (if not, the device keeps the start for a speak still on its way).
type SpeakStartResult struct {
	Started bool `json:"started"`
}

// DecodeSpeakStartResult decodes a speak.start result's body.
func DecodeSpeakStartResult(b []byte, max int) (SpeakStartResult, error) {
	var w struct {
		Started *bool `json:"started"`
	}
	if err := decodeBody("speak-start-result", b, max, &w); err != nil {
		return SpeakStartResult{}, err
	}
	if w.Started == nil {
		return SpeakStartResult{}, fieldErr("speak-start-result", "started", KindMissing, "required, a boolean")
	}
	return SpeakStartResult{Started: *w.Started}, nil
}

// SpeakStop is the body of a speak.stop query: the utterance that plays
// ends after its current sentence (BargeInSentence) or at once
// (BargeInImmediate).
type SpeakStop struct {
	At BargeIn `json:"at"`
}

// DecodeSpeakStop decodes and validates a speak.stop query's body.
func DecodeSpeakStop(b []byte, max int) (SpeakStop, error) {
	var s SpeakStop
	if err := decodeBody("speak-stop", b, max, &s); err != nil {
		return SpeakStop{}, err
	}
	switch s.At {
	case BargeInSentence, BargeInImmediate:
		return s, nil
	case "":
		return SpeakStop{}, fieldErr("speak-stop", "at", KindMissing, `required, "sentence" or "immediate"`)
	}
	return SpeakStop{}, fieldErr("speak-stop", "at", KindInvalid, `must be "sentence" or "immediate", got %q`, s.At)
}

// SpeakStopResult answers a speak.stop: whether an utterance was playing.
type SpeakStopResult struct {
	Stopped bool `json:"stopped"`
}

// DecodeSpeakStopResult decodes a speak.stop result's body.
func DecodeSpeakStopResult(b []byte, max int) (SpeakStopResult, error) {
	var w struct {
		Stopped *bool `json:"stopped"`
	}
	if err := decodeBody("speak-stop-result", b, max, &w); err != nil {
		return SpeakStopResult{}, err
	}
	if w.Stopped == nil {
		return SpeakStopResult{}, fieldErr("speak-stop-result", "stopped", KindMissing, "required, a boolean")
	}
	return SpeakStopResult{Stopped: *w.Stopped}, nil
}

// MaxSpeakMoreSeq bounds a speak.more's seq: the appends to one speak.
const MaxSpeakMoreSeq = 10000

// SpeakMore is the body of a speak.more query: more words for the speak
// with MessageID that is still being written (SpeakRequest.More).
//
// Seq numbers a speak's appends from 1. The body appends each one's
// sentences in seq order to the open speak with that MessageID, whatever
// order they arrive in (queries run concurrently, and an append may even
// come before its speak); a seq it already has is ignored, so an append
// delivered twice is said once. More false is the end mark: nothing more
// comes, and Message may then be empty. The speak's one result
// (SpeakResult) comes once everything appended has played after the end
// mark — or, when no append comes for the body's MoreWait (device/speak,
// 10 s by default), once what it had has played: it takes no more.
// Appends to a speak that has ended (stopped, cut off by a newer speak,
// past its end mark or its MoreWait) are refused: Appended is false.
//
// Emotion, when set, is the utterance's emotion from this append on: a
// model writes it after its words (issue 40), so the speak's first words
// go with neutral and the body shows the emotion, and synthesizes the
// sentences still to come with it, once it is known.
type SpeakMore struct {
	MessageID string  `json:"messageId"`
	Seq       int     `json:"seq"`
	Message   string  `json:"message,omitempty"`
	More      bool    `json:"more,omitempty"`
	Emotion   Emotion `json:"emotion,omitempty"`
}

// Validate checks a SpeakMore as DecodeSpeakMore does. How many characters
// a device speaks at most, first words and appends together, is the
// device's own limit.
func (m SpeakMore) Validate() error {
	c := checker{typ: "speak-more"}
	c.id("messageId", m.MessageID)
	switch {
	case m.Seq == 0:
		c.fail("seq", KindMissing, "required, from 1 to %d", MaxSpeakMoreSeq)
	case m.Seq < 1 || m.Seq > MaxSpeakMoreSeq:
		c.fail("seq", KindInvalid, "must be from 1 to %d, got %d", MaxSpeakMoreSeq, m.Seq)
	}
	switch {
	case !utf8.ValidString(m.Message):
		c.fail("message", KindInvalid, "must be valid UTF-8")
	case m.More && strings.TrimSpace(m.Message) == "":
		c.fail("message", KindMissing, "required with more, the words to append (only the end mark may be empty)")
	}
	if m.Emotion != "" && !m.Emotion.Valid() {
		c.fail("emotion", KindInvalid, "must be one of neutral, happy, sad, angry, got %q", m.Emotion)
	}
	return c.done()
}

// DecodeSpeakMore decodes and validates a speak.more query's body.
func DecodeSpeakMore(b []byte, max int) (SpeakMore, error) {
	var m SpeakMore
	if err := decodeBody("speak-more", b, max, &m); err != nil {
		return SpeakMore{}, err
	}
	if err := m.Validate(); err != nil {
		return SpeakMore{}, err
	}
	return m, nil
}

// SpeakMoreResult answers a speak.more: whether the body took the append
// (for the open speak, for one still on its way, or as a duplicate of one
// it has); false when the speak it names has ended.
type SpeakMoreResult struct {
	Appended bool `json:"appended"`
}

// DecodeSpeakMoreResult decodes a speak.more result's body.
func DecodeSpeakMoreResult(b []byte, max int) (SpeakMoreResult, error) {
	var w struct {
		Appended *bool `json:"appended"`
	}
	if err := decodeBody("speak-more-result", b, max, &w); err != nil {
		return SpeakMoreResult{}, err
	}
	if w.Appended == nil {
		return SpeakMoreResult{}, fieldErr("speak-more-result", "appended", KindMissing, "required, a boolean")
	}
	return SpeakMoreResult{Appended: *w.Appended}, nil
}

// VisionRequest is the body of a vision query: it has no parameters (the
// body is absent, null or {}).
type VisionRequest struct{}

// DecodeVisionRequest checks a vision query's body: absent, null or {}.
func DecodeVisionRequest(b []byte, max int) (VisionRequest, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return VisionRequest{}, nil
	}
	var r VisionRequest
	if err := decodeBody("vision", b, max, &r); err != nil {
		return VisionRequest{}, err
	}
	return r, nil
}

// VisionResult is the body of a vision result: the newest frame (aikyo's
// visionKnowledge reads "image"). Image is base64, or a data: URL; MIME,
// when absent, is whatever type the bytes have (aikyo's bodies send only
// the image).
type VisionResult struct {
	Image      string    `json:"image"`
	MIME       string    `json:"mime,omitempty"`
	Width      int       `json:"width,omitempty"`
	Height     int       `json:"height,omitempty"`
	CapturedAt time.Time `json:"capturedAt,omitzero"`
}

// DecodeVisionResult decodes and validates a vision result's body; max 0
// means DefaultMaxResultBytes (a frame is large).
func DecodeVisionResult(b []byte, max int) (VisionResult, error) {
	if max <= 0 {
		max = DefaultMaxResultBytes
	}
	var w struct {
		Image      string `json:"image"`
		MIME       string `json:"mime"`
		Width      int    `json:"width"`
		Height     int    `json:"height"`
		CapturedAt string `json:"capturedAt"`
	}
	if err := decodeBody("vision-result", b, max, &w); err != nil {
		return VisionResult{}, err
	}
	c := checker{typ: "vision-result"}
	if w.Image == "" {
		c.fail("image", KindMissing, "required, the frame (base64 or a data: URL)")
	}
	if len(w.MIME) > MaxIdentityLen || !utf8.ValidString(w.MIME) || strings.ContainsAny(w.MIME, " \t\r\n") {
		c.fail("mime", KindInvalid, "must be a media type of at most %d bytes, got %q", MaxIdentityLen, w.MIME)
	}
	c.nonNegative("width", w.Width)
	c.nonNegative("height", w.Height)
	captured := c.time("capturedAt", w.CapturedAt, false)
	if err := c.done(); err != nil {
		return VisionResult{}, err
	}
	return VisionResult{Image: w.Image, MIME: w.MIME, Width: w.Width, Height: w.Height, CapturedAt: captured}, nil
}

// Phase command actions.
const (
	PhaseActionStart = "start"
	PhaseActionEnd   = "end"
)

// PhaseCommand is the body of a phase query to the room's active floor (an
// operator's `chorus phase start|end`), and of its result: open or end a
// realtime phase of the room, or of one whisper channel.
type PhaseCommand struct {
	Action  string `json:"action"`
	Channel string `json:"channel,omitempty"` // a whisper channel; empty for the room
}

// DecodePhaseCommand decodes and validates a phase query's body (or its
// result's).
func DecodePhaseCommand(b []byte, max int) (PhaseCommand, error) {
	var p PhaseCommand
	if err := decodeBody("phase-command", b, max, &p); err != nil {
		return PhaseCommand{}, err
	}
	c := checker{typ: "phase-command"}
	switch p.Action {
	case PhaseActionStart, PhaseActionEnd:
	case "":
		c.fail("action", KindMissing, `required, "start" or "end"`)
	default:
		c.fail("action", KindInvalid, `must be "start" or "end", got %q`, p.Action)
	}
	if p.Channel != "" {
		c.identity("channel", p.Channel)
	}
	if err := c.done(); err != nil {
		return PhaseCommand{}, err
	}
	return p, nil
}

// decodeBody is decodeStrict for a query's or a result's body, which must
// be a JSON object: an absent body or null is an empty object.
func decodeBody(typ string, b []byte, max int, v any) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		b = []byte("{}")
	} else if t[0] != '{' {
		if max <= 0 {
			max = DefaultMaxBytes
		}
		if len(b) > max {
			return fieldErr(typ, "", KindOversize, "payload is %d bytes, cap is %d", len(b), max)
		}
		return fieldErr(typ, "", KindInvalid, "must be a JSON object")
	}
	return decodeStrict(typ, b, max, v)
}

// token checks a hold token: 1 to MaxHoldLen bytes of UTF-8 without
// control characters; empty is an error only when required.
func (c *checker) token(field, s string, required bool) {
	switch {
	case s == "":
		if required {
			c.fail(field, KindMissing, "required and must not be empty")
		}
	case len(s) > MaxHoldLen:
		c.fail(field, KindInvalid, "must be at most %d bytes, got %d", MaxHoldLen, len(s))
	case !utf8.ValidString(s):
		c.fail(field, KindInvalid, "must be valid UTF-8")
	}
}

// millis checks a duration in milliseconds: 0 to MaxSpeakingMs.
func (c *checker) millis(field string, ms int64) {
	if ms < 0 || ms > MaxSpeakingMs {
		c.fail(field, KindInvalid, "must be from 0 to %d, got %d", MaxSpeakingMs, ms)
	}
}

// time parses an RFC 3339 time; an empty one is the zero time, or missing
// when required.
func (c *checker) time(field, s string, required bool) time.Time {
	if s == "" {
		if required {
			c.fail(field, KindMissing, "required, an RFC 3339 time")
		}
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		c.fail(field, KindInvalid, "must be an RFC 3339 time, got %q", s)
	}
	return t
}

// QueryCancel is the body of a query.cancel: the id of the running query
// to stop (its type is TypeCancel).
type QueryCancel struct {
	ID string `json:"id"`
}

// DecodeQueryCancel decodes and validates a query.cancel's body.
func DecodeQueryCancel(b []byte, max int) (QueryCancel, error) {
	var q QueryCancel
	if err := decodeBody("cancel", b, max, &q); err != nil {
		return QueryCancel{}, err
	}
	c := checker{typ: "cancel"}
	c.id("id", q.ID)
	if err := c.done(); err != nil {
		return QueryCancel{}, err
	}
	return q, nil
}
