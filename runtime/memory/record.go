package memory

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Bounds of a fact's fields.
const (
	MaxText   = 200  // characters of Text; longer is clipped
	MaxKey    = 100  // characters of Key; longer is clipped
	MaxID     = 128  // bytes of Person, ID, MessageID, Robot, Supersedes; longer is refused
	MaxDims   = 4096 // dimensions of a Vector
	maxLine   = 64 << 10
	opFact    = "fact"
	opMet     = "met"
	opEnd     = "end"
	keyName   = "name"
	maxCore   = 3 // pinned facts of a person recalled always
	endPrefix = `{"op":"end"`
)

// Fact is one remembered fact.
type Fact struct {
	ID         string    `json:"id"`
	Person     string    `json:"person"`               // the identity it belongs to
	Key        string    `json:"key,omitempty"`        // what it is about ("name", "favorite color", "like:green tea"); a newer fact with the same person+key supersedes the older
	Text       string    `json:"text"`                 // one short statement, e.g. "name is Alice", "likes green tea"
	MessageID  string    `json:"messageId"`            // the message it came from
	Robot      string    `json:"robot"`                // the companion that was told
	Created    time.Time `json:"created"`              //
	Pinned     bool      `json:"pinned,omitempty"`     // part of the person's core (key "name" is always pinned)
	Supersedes string    `json:"supersedes,omitempty"` // the id of the fact it replaced
	Vec        Vector    `json:"vec,omitempty"`        // an embedding of Text (optional; RecallVec)
}

// Wire is f as the room's wire carries it (protocol.MemoryFact: the wire
// holds no vector; the receiver keeps the fact by its words).
func (f Fact) Wire() protocol.MemoryFact {
	return protocol.MemoryFact{ID: f.ID, Person: f.Person, Key: f.Key, Text: f.Text, Created: f.Created,
		Robot: f.Robot, MessageID: f.MessageID, Pinned: f.Pinned, Supersedes: f.Supersedes}
}

// FromWire is the fact w, learned by robot (the companion that shared it).
func FromWire(w protocol.MemoryFact, robot string) Fact {
	return Fact{ID: w.ID, Person: w.Person, Key: w.Key, Text: w.Text, MessageID: w.MessageID,
		Robot: robot, Created: w.Created, Pinned: w.Pinned, Supersedes: w.Supersedes}
}

// Vector is an embedding. In a record it is the little-endian float32s,
// base64: exact and about a third of the size of a JSON array.
type Vector []float32

// MarshalJSON encodes v as base64 of its little-endian float32s.
func (v Vector) MarshalJSON() ([]byte, error) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON decodes what MarshalJSON wrote; NaN and infinities, and
// more than MaxDims dimensions, are refused.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("vec: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("vec: %w", err)
	}
	if len(b)%4 != 0 || len(b)/4 > MaxDims {
		return fmt.Errorf("vec: %d bytes is not up to %d float32s", len(b), MaxDims)
	}
	out := make(Vector, len(b)/4)
	for i := range out {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("vec: not a finite number")
		}
		out[i] = x
	}
	if len(out) == 0 {
		out = nil
	}
	*v = out
	return nil
}

// wire is any record as it is read.
type wire struct {
	Op string `json:"op"`
	Fact
	At time.Time `json:"at"`
	N  *int      `json:"n"`
}

type factRecord struct {
	Op string `json:"op"`
	Fact
}

type metRecord struct {
	Op     string    `json:"op"`
	Person string    `json:"person"`
	At     time.Time `json:"at"`
}

type endRecord struct {
	Op string `json:"op"`
	N  int    `json:"n"`
}

func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // a trailing newline; HTML escaping kept (harmless)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("memory: encoding a record: %v", err)) // only strings, times, bools and finite floats
	}
	return buf.Bytes()
}

func factLine(f Fact) []byte { return encode(factRecord{Op: opFact, Fact: f}) }

func metLine(person string, at time.Time) []byte {
	return encode(metRecord{Op: opMet, Person: person, At: at})
}

func endLine(n int) []byte { return encode(endRecord{Op: opEnd, N: n}) }

// decodeLine parses one line (without its newline). Fact records are
// checked as Add checks them; what fails is a bad line.
func decodeLine(line []byte) (wire, error) {
	var w wire
	if len(line) > maxLine {
		return w, fmt.Errorf("a line of %d bytes", len(line))
	}
	if !utf8.Valid(line) {
		return w, errors.New("not UTF-8")
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return w, err
	}
	switch w.Op {
	case opFact:
		f, err := clean(w.Fact)
		if err != nil {
			return w, err
		}
		if f.ID == "" {
			return w, errors.New("a fact without an id")
		}
		w.Fact = f
	case opMet:
		if err := checkID("person", w.Person); err != nil {
			return w, err
		}
		if w.Person == "" {
			return w, errors.New("a met record without a person")
		}
	case opEnd:
		if w.N == nil || *w.N < 0 {
			return w, errors.New("an end record without a count")
		}
	default:
		return w, fmt.Errorf("unknown op %q", w.Op)
	}
	return w, nil
}

func checkID(field, s string) error {
	if len(s) > MaxID {
		return fmt.Errorf("%s is longer than %d bytes", field, MaxID)
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return fmt.Errorf("%s holds a control character or invalid UTF-8", field)
		}
	}
	return nil
}

// clean checks and normalises a fact: identities bounded and printable,
// Text single-spaced and clipped, Key as NormKey has it and clipped,
// "name" pinned.
func clean(f Fact) (Fact, error) {
	for _, c := range []struct{ field, v string }{{"id", f.ID}, {"person", f.Person}, {"messageId", f.MessageID}, {"robot", f.Robot}, {"supersedes", f.Supersedes}} {
		if err := checkID(c.field, c.v); err != nil {
			return f, err
		}
	}
	if f.Person == "" {
		return f, errors.New("a fact without a person")
	}
	f.Text = clip(oneLine(f.Text), MaxText)
	if f.Text == "" {
		return f, errors.New("a fact without text")
	}
	f.Key = clip(NormKey(f.Key), MaxKey)
	if f.Key == keyName {
		f.Pinned = true
	}
	if len(f.Vec) > MaxDims {
		return f, fmt.Errorf("a vector of %d dimensions", len(f.Vec))
	}
	for _, x := range f.Vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return f, errors.New("a vector with a non-finite number")
		}
	}
	return f, nil
}

// oneLine replaces control characters and runs of spaces with one space,
// and drops invalid UTF-8.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(s) {
		if r == utf8.RuneError {
			continue
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}
