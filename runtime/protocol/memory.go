package protocol

import (
	"time"
	"unicode/utf8"
)

// Memory on the wire (issue 29).
//
// A companion that forgot someone reports it on its own room topic
// (Forgot): every companion of the room hears the person's "forget me",
// and each one says what it erased. An operator, or a person about
// themselves, controls a device's memory with a query of TypeMemory
// (body: a MemoryRequest) on the device's memory topic under their own
// name; the device answers (result body: a MemoryAnswer) on that topic's
// answer, which only they read (runtime/topic, runtime/query's private
// lane).

// TypeMemory is the query type of a memory request.
const TypeMemory = "memory"

// Forgot is a companion's report that it erased what it remembered about
// a person.
type Forgot struct {
	From      string `json:"from"` // the companion that forgot
	ID        string `json:"id"`   // the report's id: a receiver acts once per id
	Person    string `json:"person"`
	MessageID string `json:"messageId,omitempty"` // the person's message that asked, if one did
	Forgotten int    `json:"forgotten"`           // facts erased
}

// DecodeForgot decodes and validates a Forgot report.
func DecodeForgot(b []byte, max int) (Forgot, error) {
	var f Forgot
	if err := decodeStrict("forgot", b, max, &f); err != nil {
		return Forgot{}, err
	}
	c := checker{typ: "forgot"}
	c.identity("from", f.From)
	c.id("id", f.ID)
	c.identity("person", f.Person)
	if f.MessageID != "" {
		c.id("messageId", f.MessageID)
	}
	c.nonNegative("forgotten", f.Forgotten)
	return f, c.done()
}

// Memory request operations.
const (
	MemoryList   = "list"   // the facts (text and when)
	MemoryExport = "export" // the facts with everything kept about them
	MemoryForget = "forget" // erase one fact (Fact) or everything about Person
	MemoryWipe   = "wipe"   // erase everything (operators only)
	// The voiceprints (docs/hearing.md, "Who is speaking"): list them,
	// erase a person's, or enrol a person from embeddings of their voice
	// (Model, Embeddings: `chorus voice enroll` computes them with the
	// robot's service). Forget and wipe erase voiceprints with the facts.
	MemoryVoices      = "voices"
	MemoryForgetVoice = "forget-voice"
	MemoryEnrolVoice  = "enroll-voice"
)

// Bounds of an enrolment by command.
const (
	MaxEnrolEmbeddings = 16
	MaxEmbeddingDims   = 4096
	// MaxMemoryRequestBytes bounds a memory request's query: an
	// enrolment's embeddings are more than other queries' 64 KB.
	MaxMemoryRequestBytes = 1 << 20
)

// VoicePrint is a person's voiceprint as a MemoryAnswer lists it.
type VoicePrint struct {
	Person  string    `json:"person"`
	Samples int       `json:"samples"` // embeddings kept
	Dims    int       `json:"dims"`
	Model   string    `json:"model,omitempty"`
	Updated time.Time `json:"updated"`
}

// MemoryRequest asks a device about its companion's memory.
type MemoryRequest struct {
	ID     string `json:"id"`
	Op     string `json:"op"`
	Person string `json:"person,omitempty"` // whose facts; "" with list/export: everyone's for an operator, the asker's own for anyone else
	Fact   string `json:"fact,omitempty"`   // forget: this fact only (its id says whose it is: Person may be "")
	// Model and Embeddings (enroll-voice only): the embeddings of the
	// person's voice and the model that made them.
	Model      string      `json:"model,omitempty"`
	Embeddings [][]float32 `json:"embeddings,omitempty"`
}

// DecodeMemoryRequest decodes and validates a MemoryRequest.
func DecodeMemoryRequest(b []byte, max int) (MemoryRequest, error) {
	var r MemoryRequest
	if err := decodeStrict("memory", b, max, &r); err != nil {
		return MemoryRequest{}, err
	}
	return r, r.Validate()
}

// Validate names the first thing wrong with r, as DecodeMemoryRequest
// would: a request is checked before it is sent.
func (r MemoryRequest) Validate() error {
	c := checker{typ: "memory"}
	c.id("id", r.ID)
	switch r.Op {
	case MemoryList, MemoryExport, MemoryForget, MemoryWipe, MemoryVoices:
	case MemoryForgetVoice, MemoryEnrolVoice:
		if r.Person == "" {
			c.fail("person", KindMissing, "%s needs the person", r.Op)
		}
	case "":
		c.fail("op", KindMissing, "required: list, export, forget, wipe, voices, forget-voice or enroll-voice")
	default:
		c.fail("op", KindInvalid, "must be list, export, forget, wipe, voices, forget-voice or enroll-voice, got %q", r.Op)
	}
	if r.Op == MemoryEnrolVoice {
		switch {
		case r.Model == "" || len(r.Model) > 200:
			c.fail("model", KindInvalid, "enroll-voice names the embeddings' model (1 to 200 bytes)")
		case len(r.Embeddings) == 0 || len(r.Embeddings) > MaxEnrolEmbeddings:
			c.fail("embeddings", KindInvalid, "enroll-voice takes 1 to %d embeddings, got %d", MaxEnrolEmbeddings, len(r.Embeddings))
		}
		for _, e := range r.Embeddings {
			if len(e) == 0 || len(e) > MaxEmbeddingDims || len(e) != len(r.Embeddings[0]) {
				c.fail("embeddings", KindInvalid, "each embedding has the same 1 to %d dimensions", MaxEmbeddingDims)
				break
			}
		}
	} else if r.Model != "" || r.Embeddings != nil {
		c.fail("embeddings", KindInvalid, "only enroll-voice takes a model and embeddings")
	}
	if r.Person != "" {
		c.identity("person", r.Person)
	}
	if r.Op == MemoryForget && r.Person == "" && r.Fact == "" {
		c.fail("person", KindMissing, "forget needs the person or the fact (wipe erases everyone)")
	}
	if r.Fact != "" {
		c.id("fact", r.Fact)
		if r.Op != MemoryForget {
			c.fail("fact", KindInvalid, "only forget takes a fact")
		}
	}
	return c.done()
}

// MemoryFact is a remembered fact as a MemoryAnswer lists it.
type MemoryFact struct {
	ID         string    `json:"id"`
	Person     string    `json:"person"`
	Key        string    `json:"key,omitempty"`
	Text       string    `json:"text"`
	Created    time.Time `json:"created"`
	Robot      string    `json:"robot,omitempty"`     // export only
	MessageID  string    `json:"messageId,omitempty"` // export only
	Pinned     bool      `json:"pinned,omitempty"`
	Supersedes string    `json:"supersedes,omitempty"` // export only
}

// MemoryAnswer answers a MemoryRequest: Error says why it was refused.
type MemoryAnswer struct {
	ID        string       `json:"id"` // the request's
	Error     string       `json:"error,omitempty"`
	Facts     []MemoryFact `json:"facts,omitempty"`
	Forgotten int          `json:"forgotten,omitempty"`
	Voices    []VoicePrint `json:"voices,omitempty"` // voices: the voiceprints
}

// MaxMemoryFacts bounds the facts one answer lists.
const MaxMemoryFacts = 10000

// DecodeMemoryAnswer decodes and validates a MemoryAnswer.
func DecodeMemoryAnswer(b []byte, max int) (MemoryAnswer, error) {
	var a MemoryAnswer
	if err := decodeStrict("memory-answer", b, max, &a); err != nil {
		return MemoryAnswer{}, err
	}
	c := checker{typ: "memory-answer"}
	c.id("id", a.ID)
	c.nonNegative("forgotten", a.Forgotten)
	if len(a.Facts) > MaxMemoryFacts {
		c.fail("facts", KindInvalid, "at most %d, got %d", MaxMemoryFacts, len(a.Facts))
	}
	for _, f := range a.Facts {
		c.id("facts.id", f.ID)
		c.identity("facts.person", f.Person)
		if !utf8.ValidString(f.Text) || !utf8.ValidString(f.Key) {
			c.fail("facts.text", KindInvalid, "must be valid UTF-8")
		}
	}
	for i := range a.Facts {
		a.Facts[i].Created = a.Facts[i].Created.UTC()
	}
	return a, c.done()
}

// MaxSharedFacts bounds the facts one Shared report carries.
const MaxSharedFacts = 64

// Shared is what a companion learned at one write, shared with the other
// companions of its room when the room shares memory (memory.share).
type Shared struct {
	From  string       `json:"from"` // the companion that learned them
	ID    string       `json:"id"`   // the report's id: a receiver acts once per id
	Facts []MemoryFact `json:"facts"`
}

// DecodeShared decodes and validates a Shared report.
func DecodeShared(b []byte, max int) (Shared, error) {
	var s Shared
	if err := decodeStrict("shared", b, max, &s); err != nil {
		return Shared{}, err
	}
	c := checker{typ: "shared"}
	c.identity("from", s.From)
	c.id("id", s.ID)
	switch {
	case len(s.Facts) == 0:
		c.fail("facts", KindMissing, "required: at least one fact")
	case len(s.Facts) > MaxSharedFacts:
		c.fail("facts", KindInvalid, "at most %d, got %d", MaxSharedFacts, len(s.Facts))
	}
	for i, f := range s.Facts {
		c.id("facts.id", f.ID)
		c.identity("facts.person", f.Person)
		c.id("facts.messageId", f.MessageID)
		if f.Supersedes != "" {
			c.id("facts.supersedes", f.Supersedes)
		}
		switch n := utf8.RuneCountInString(f.Text); {
		case !utf8.ValidString(f.Text) || !utf8.ValidString(f.Key):
			c.fail("facts.text", KindInvalid, "must be valid UTF-8")
		case n == 0:
			c.fail("facts.text", KindMissing, "required and must not be empty")
		case n > MaxFactText:
			c.fail("facts.text", KindInvalid, "at most %d characters, got %d", MaxFactText, n)
		}
		s.Facts[i].Created = f.Created.UTC()
	}
	return s, c.done()
}

// MaxFactText bounds a fact's text, in characters (runtime/memory keeps
// the same bound).
const MaxFactText = 200

// MaxForgets bounds the entries of a companion's ForgetLog.
const MaxForgets = 64

// ForgetLog is a companion's retained record of the people who asked the
// room to forget them (its newest MaxForgets): a companion that was away
// when someone said "forget me" reads its peers' logs when it comes back
// and forgets what it learned about them before they asked.
type ForgetLog struct {
	From    string        `json:"from"`
	Forgets []ForgetEntry `json:"forgets"`
}

// ForgetEntry is one "forget me": who, when the companion heard it, and
// the message that asked.
type ForgetEntry struct {
	Person    string    `json:"person"`
	At        time.Time `json:"at"`
	MessageID string    `json:"messageId"`
}

// DecodeForgetLog decodes and validates a ForgetLog.
func DecodeForgetLog(b []byte, max int) (ForgetLog, error) {
	var l ForgetLog
	if err := decodeStrict("forget-log", b, max, &l); err != nil {
		return ForgetLog{}, err
	}
	c := checker{typ: "forget-log"}
	c.identity("from", l.From)
	if len(l.Forgets) > MaxForgets {
		c.fail("forgets", KindInvalid, "at most %d, got %d", MaxForgets, len(l.Forgets))
	}
	for i, f := range l.Forgets {
		c.identity("forgets.person", f.Person)
		c.id("forgets.messageId", f.MessageID)
		if f.At.IsZero() {
			c.fail("forgets.at", KindMissing, "required: when it was asked")
		}
		l.Forgets[i].At = f.At.UTC()
	}
	if l.Forgets == nil {
		l.Forgets = []ForgetEntry{}
	}
	return l, c.done()
}
