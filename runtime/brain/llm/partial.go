// Reading a state answer while it streams (issue 28).

package llm

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/sentence"
)

// Partial reads a state answer while it streams: the vote as soon as its
// fields are written (state, importance, closing; selected when the model
// writes it before them), and the draft's words sentence by sentence.
// What it reads early is what ParseThought would read from the same text
// (a code fence, JSON's escapes, invalid UTF-8 read as U+FFFD); the whole
// answer is still checked by ParseThought, which decides.
//
// It follows one JSON object byte by byte, each byte read once (only an
// incomplete escape, rune, number or fence is looked at again when more
// comes), so a long answer costs time in proportion to its length.
// Keys are matched exactly: a key ParseThought would also take in
// another case ("State"), a key written twice or one it does not know
// keeps back a vote not yet given and is not read into the draft.
//
// # Concurrency
//
// A Partial is not safe for concurrent use.
type Partial struct {
	draft bool
	buf   []byte // the answer so far
	pos   int    // buf[:pos] is read
	st    state
	first bool    // an object or array just opened: a closer may come now
	stack []frame // the open objects and arrays, outermost first
	key   string  // the key whose value comes next, in the innermost object
	role  role    // of the value being read
	str   strings.Builder
	num   int // where the number being read starts in buf

	fenced bool // a code fence was skipped

	seen  map[string]bool // the keys read at the top and in the draft
	odd   bool            // a key written twice or unknown: no early vote
	bad   bool            // a vote field of the wrong type or value
	badAt string          // the first such field
	voted bool
	vote  brain.Thought
	has   [4]bool // state, importance, selected (read when written), closing

	msg     strings.Builder // the draft's message, decoded
	closed  bool            // its string has ended
	checked int             // msg[:checked] is looked at for sentence ends
	said    int             // msg[:said] is whole sentences
	from    int             // where msg's first non-space character starts (-1: none yet)
	to      int             // where the last one in msg[:checked] ends
	upto    int             // where the last one in msg[:said] ends
	emotion protocol.Emotion
}

type state uint8

const (
	sHead    state = iota // before the object: whitespace, a code fence
	sValue                // a value comes
	sKey                  // a key comes (or a closer, when first)
	sColon                // the colon after a key
	sAfter                // a comma or a closer
	sString               // in a string
	sNumber               // in a number
	sLiteral              // in true, false or null
	sDone                 // the object has ended
	sDead                 // not JSON this reader can follow
)

type frame struct {
	obj   bool
	draft bool // the draft's object
}

// role is what a value is to the answer.
type role uint8

const (
	rOther role = iota
	rKey
	rState
	rImportance
	rSelected
	rClosing
	rDraft
	rMessage
	rEmotion
)

// vote reports whether r is one of the vote's fields.
func (r role) vote() bool { return r >= rState && r <= rClosing }

// topRoles are the answer's keys: the vote's, and the card's events
// (issue 29), written after the vote and before the draft; Partial does
// not read them (ParseThought checks them against the card).
var topRoles = map[string]role{"state": rState, "importance": rImportance, "selected": rSelected, "closing": rClosing, "events": rOther}
var draftRoles = map[string]role{"message": rMessage, "emotion": rEmotion, "to": rOther}

// NewPartial reads a state answer with the draft (draft) or without.
func NewPartial(draft bool) *Partial {
	return &Partial{draft: draft, seen: map[string]bool{}, from: -1}
}

// Add takes the next piece of the answer's text (pieces arrive in order).
func (p *Partial) Add(piece string) {
	if p.st == sDead || p.st == sDone {
		return // what comes after the object is for ParseThought
	}
	p.buf = append(p.buf, piece...)
	for p.pos < len(p.buf) && p.st != sDead && p.st != sDone && p.step() {
	}
	p.sentences()
}

// Vote returns the State's fields (brain.Thought with State, Importance,
// Selected, Closing set; Draft empty) once state, importance and closing
// are complete and valid, and ok; before that, ok is false. Once ok it never changes.
func (p *Partial) Vote() (brain.Thought, bool) {
	if !p.voted {
		return brain.Thought{}, false
	}
	return p.vote, true // each of its fields is read once: it stays
}

// Broken names the vote field written with a value ParseThought refuses
// (the wrong type, out of range, not one of its words, null) before any
// vote was complete, or is "": the answer will fail however it goes on,
// so it need not be read to its end.
func (p *Partial) Broken() string {
	if p.bad && !p.voted {
		return p.badAt
	}
	return ""
}

// spoil marks the vote field being read as broken.
func (p *Partial) spoil() {
	if !p.bad {
		p.badAt = p.key
	}
	p.bad = true
}

// Said returns the draft's message so far: decoded from its JSON string,
// its first clause, then complete sentences only (runtime/sentence decides
// what ends a clause and a sentence;
// the text after the last complete sentence is held back until the
// sentence ends or the message string closes), the draft's emotion once
// it is written and valid (else ""), and whether the message string is
// closed. The text only grows, each a prefix of the next, and is trimmed
// as ParseThought trims the draft; an emotion written "" is neutral, as
// ParseThought reads it.
func (p *Partial) Said() (text string, e protocol.Emotion, complete bool) {
	if p.from >= 0 && p.upto > p.from {
		text = p.msg.String()[p.from:p.upto] // trimmed: what TrimSpace keeps of msg[:said]
	}
	return text, p.emotion, p.closed
}

// step reads from buf[pos:]; it reports false when it needs more text.
func (p *Partial) step() bool {
	c := p.buf[p.pos]
	switch p.st {
	case sHead:
		return p.head()
	case sString:
		return p.inString()
	case sNumber:
		if strings.IndexByte("0123456789+-.eE", c) >= 0 {
			p.pos++
			return true
		}
		p.number(string(p.buf[p.num:p.pos]))
		p.ended()
		return true
	case sLiteral:
		return p.literal()
	}
	if isSpace(c) {
		p.pos++
		return true
	}
	p.pos++
	switch p.st {
	case sValue:
		p.value(c)
	case sKey:
		switch {
		case c == '"':
			p.role, p.st = rKey, sString
			p.str.Reset()
		case c == '}' && p.first:
			p.close()
		default:
			p.st = sDead
		}
	case sColon:
		if c != ':' {
			p.st = sDead
			return true
		}
		p.st, p.role = sValue, p.roleOf(p.key)
	case sAfter:
		top := p.stack[len(p.stack)-1]
		switch {
		case c == ',' && top.obj:
			p.st, p.first = sKey, false
		case c == ',':
			p.st, p.first, p.role = sValue, false, rOther
		case c == '}' && top.obj, c == ']' && !top.obj:
			p.close()
		default:
			p.st = sDead
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// head skips what ParseThought (strictJSON) skips before the object:
// white space and one code fence, ```json, ``` or both.
func (p *Partial) head() bool {
	rest := p.buf[p.pos:]
	switch {
	case rest[0] == '{':
		p.pos++
		p.stack, p.st, p.first = append(p.stack, frame{obj: true}), sKey, true
	case rest[0] == '`' && !p.fenced:
		const fence = "```json```"
		n := 0
		for n < len(rest) && n < len(fence) && rest[n] == fence[n] {
			n++
		}
		switch {
		case n == len(rest) && n < len(fence):
			return false // which fence is not known yet
		case n == len(fence):
			p.pos += n
		case n >= len("```json"):
			p.pos += len("```json")
		case n >= len("```"):
			p.pos += len("```")
		default:
			p.st = sDead
		}
		p.fenced = true
	case !utf8.FullRune(rest):
		return false
	default:
		r, n := utf8.DecodeRune(rest)
		if !unicode.IsSpace(r) {
			p.st = sDead
		}
		p.pos += n
	}
	return true
}

// value starts a value with its first byte c.
func (p *Partial) value(c byte) {
	switch {
	case c == '"':
		p.st = sString
		p.str.Reset()
	case c == '{' || c == '[':
		f := frame{obj: c == '{', draft: p.role == rDraft && c == '{'}
		if p.role.vote() {
			p.spoil()
		}
		p.stack, p.st, p.first = append(p.stack, f), sValue, true
		if f.obj {
			p.st = sKey
		}
		p.role = rOther
	case c == ']' && p.first && !p.stack[len(p.stack)-1].obj:
		p.close()
	case c == '-' || c >= '0' && c <= '9':
		p.st, p.num = sNumber, p.pos-1
	case c >= 'a' && c <= 'z':
		p.st, p.num = sLiteral, p.pos-1
	default:
		p.st = sDead
	}
}

// close ends the innermost object or array.
func (p *Partial) close() {
	p.stack = p.stack[:len(p.stack)-1]
	if len(p.stack) == 0 {
		p.st = sDone
		return
	}
	p.ended()
}

// ended moves past a value.
func (p *Partial) ended() {
	p.st, p.role = sAfter, rOther
	if len(p.stack) == 0 {
		p.st = sDone
	}
}

// roleOf says what the value of key is to the answer, at this depth.
func (p *Partial) roleOf(key string) role {
	switch {
	case len(p.stack) == 1:
		r, known := topRoles[key]
		if key == "draft" && p.draft {
			r, known = rDraft, true
		}
		return p.once("/"+key, known, r)
	case len(p.stack) == 2 && p.stack[1].draft:
		r, known := draftRoles[key]
		return p.once("draft/"+key, known, r)
	}
	return rOther
}

// once reads a known key the first time it is written; a key written
// again or unknown makes the answer odd, and its value is skipped.
func (p *Partial) once(path string, known bool, r role) role {
	if !known || p.seen[path] {
		p.odd = true
		return rOther
	}
	p.seen[path] = true
	return r
}

// inString reads the string's next character.
func (p *Partial) inString() bool {
	rest := p.buf[p.pos:]
	if rest[0] == '"' {
		p.pos++
		p.stringEnded()
		return true
	}
	r, n := unquote(rest)
	switch {
	case n == 0:
		return false
	case n < 0:
		p.st = sDead
		return true
	}
	switch p.role {
	case rMessage:
		p.msg.WriteRune(r)
	case rOther:
	default:
		p.str.WriteRune(r)
	}
	p.pos += n
	return true
}

func (p *Partial) stringEnded() {
	s := p.str.String()
	switch p.role {
	case rKey:
		p.key, p.st = s, sColon
		return
	case rState:
		if s == string(protocol.Speak) || s == string(protocol.Listen) {
			p.vote.State = protocol.Speech(s)
			p.has[0] = true
		} else {
			p.spoil()
		}
	case rClosing:
		if protocol.Closing(s).Valid() {
			p.vote.Closing = protocol.Closing(s)
			p.has[3] = true
		} else {
			p.spoil()
		}
	case rEmotion:
		e := protocol.Emotion(s)
		if s == "" {
			e = protocol.EmotionNeutral // as ParseThought reads it
		}
		if e.Valid() {
			p.emotion = e
		}
	case rMessage:
		p.closed = true
	case rImportance, rSelected:
		p.spoil()
	}
	p.ended()
	p.voting()
}

// number ends the number s.
func (p *Partial) number(s string) {
	if p.role != rImportance {
		if p.role.vote() {
			p.spoil()
		}
		return
	}
	f, err := strconv.ParseFloat(s, 64)
	if !jsonNumber(s) || err != nil || f < 0 || f > 10 {
		p.spoil()
		return
	}
	p.vote.Importance, p.has[1] = f, true
	p.voting()
}

// literal reads true, false or null.
func (p *Partial) literal() bool {
	if c := p.buf[p.pos]; c < 'a' || c > 'z' {
		p.st = sDead
		return true
	}
	p.pos++
	switch w := string(p.buf[p.num:p.pos]); {
	case (w == "true" || w == "false") && p.role == rSelected:
		p.vote.Selected, p.has[2] = w == "true", true
		p.voting()
		p.ended()
	case w == "true" || w == "false" || w == "null":
		if p.role.vote() { // a null vote field is missing to ParseThought
			p.spoil()
		}
		p.ended()
	case !strings.HasPrefix("true", w) && !strings.HasPrefix("false", w) && !strings.HasPrefix("null", w):
		p.st = sDead
	}
	return true
}

// voting gives the vote once its four fields are read and valid.
func (p *Partial) voting() {
	if !p.voted && !p.odd && !p.bad && p.has[0] && p.has[1] && p.has[3] { // selected is not asked for (brain.Addressed)
		p.voted = true
	}
}

// sentences moves said to the last sentence end in the message so far
// (the first clause's end, before any: sentence.Clause),
// looking at each character once, and keeps where its words start and
// end (so that Said trims in constant time).
func (p *Partial) sentences() {
	m := p.msg.String()
	for p.checked < len(m) {
		r, n := utf8.DecodeRuneInString(m[p.checked:])
		first := p.said == 0 && p.from >= 0 // the first words go at their first clause
		ends := sentence.Ends(r, 0) || first && sentence.Clause(r, 0)
		if !ends {
			next := rune(-1)
			if p.checked+n < len(m) {
				next, _ = utf8.DecodeRuneInString(m[p.checked+n:])
			} else if !p.closed {
				break // what follows decides
			}
			ends = sentence.Ends(r, next) || first && sentence.Clause(r, next)
		}
		if !unicode.IsSpace(r) {
			if p.from < 0 {
				p.from = p.checked
			}
			p.to = p.checked + n
		}
		p.checked += n
		if ends || p.closed && p.checked == len(m) {
			p.said, p.upto = p.checked, p.to
		}
	}
}

// unquote reads one character of a JSON string's contents at s (not its
// closing quote) as encoding/json does: a byte, a rune (invalid UTF-8 is
// U+FFFD), an escape (a lone surrogate is U+FFFD). n is how many bytes it
// takes; 0 when s is too short to tell, -1 when it is not valid JSON.
func unquote(s []byte) (r rune, n int) {
	c := s[0]
	switch {
	case c < ' ':
		return 0, -1
	case c < utf8.RuneSelf && c != '\\':
		return rune(c), 1
	case c >= utf8.RuneSelf:
		if !utf8.FullRune(s) {
			return 0, 0
		}
		return utf8.DecodeRune(s)
	case len(s) < 2:
		return 0, 0
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
	default:
		return 0, -1
	}
	r, n = hex4(s)
	if n <= 0 || !utf16.IsSurrogate(r) {
		return r, n
	}
	// A surrogate takes the next escape with it when the two make a pair.
	r2, n2 := hex4(s[6:])
	switch {
	case n2 == 0 && len(s) < 12:
		return 0, 0
	case n2 > 0:
		if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
			return dec, 12
		}
	}
	return utf8.RuneError, 6
}

// hex4 reads \uXXXX at s: n is 6, 0 when s is too short to tell, -1 when
// it is not one.
func hex4(s []byte) (rune, int) {
	var r rune
	for i := range 6 {
		if i >= len(s) {
			return 0, 0
		}
		c := s[i]
		switch {
		case i == 0 && c == '\\', i == 1 && c == 'u':
			continue
		case i < 2:
			return 0, -1
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, -1
		}
	}
	return r, 6
}

// jsonNumber reports whether s is a number as JSON writes one.
func jsonNumber(s string) bool {
	digits := func(i int) int {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if j := digits(i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(s)
}
