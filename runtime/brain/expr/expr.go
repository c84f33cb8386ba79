// Package expr evaluates the conditions of a companion card's events
// (aikyo's `events.conditions[].expression`): small boolean expressions
// over the card's event parameters, such as
//
//	already_replied == false
//	need_response === true && !(mood == "sad" || count >= 3)
//
// # Why a subset of our own
//
// aikyo evaluates these as JavaScript. A general expression library was
// measured against the daemon's binary budget (chorusd for linux/arm64,
// -trimpath -s -w, must stay ≤16 MB): github.com/expr-lang/expr v1.17.8
// adds about 2.2 MB to a minimal program, seven times the 300 KB an
// expression language may take. This package is a few hundred lines and
// covers what companion cards write.
//
// # Language
//
//   - literals: true, false, null, numbers (JSON's, 3, -1.5, 2e3) and
//     strings in double or single quotes with JSON's escapes
//   - identifiers: [A-Za-z_][A-Za-z0-9_]*, the card's parameters
//   - comparison: == and === (equal: the same type and value, no
//     conversion, as JavaScript's ===), != and !== (not equal), and
//     <, <=, >, >= between two numbers or two strings (else false)
//   - logic: ! (not), && (and), || (or), with JavaScript's precedence
//     (! over comparisons over equality over && over ||) and short
//     circuits; parentheses group
//
// A value is null, a bool, a float64 or a string; && and || give a bool,
// and a value is true as JavaScript's truthiness says (false, 0, NaN, ""
// and null are false). An expression is at most MaxLen bytes, nested at
// most MaxDepth deep.
//
// # Usage
//
//	e, err := expr.Parse(`already_replied == false`)
//	names := e.Names()                                   // [already_replied]
//	ok, err := e.Holds(map[string]any{"already_replied": false}) // true
//
// # Concurrency
//
// An *Expr is immutable: safe for concurrent use.
package expr

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Bounds of an expression.
const (
	MaxLen   = 1000
	MaxDepth = 32
)

// Expr is a parsed expression.
type Expr struct {
	root  *node
	names []string
	src   string
}

type kind uint8

const (
	kLit kind = iota
	kVar
	kNot
	kAnd
	kOr
	kEq
	kNe
	kLt
	kLe
	kGt
	kGe
)

type node struct {
	kind kind
	val  any    // kLit
	name string // kVar
	l, r *node
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Names are the identifiers the expression uses, sorted, each once.
func (e *Expr) Names() []string { return slices.Clone(e.names) }

// ErrUnknown is returned (wrapped) by Eval for an identifier that has no
// value.
var ErrUnknown = errors.New("expr: no value for")

// Holds evaluates e with vars and reports whether its value is true.
func (e *Expr) Holds(vars map[string]any) (bool, error) {
	v, err := e.Eval(vars)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

// Eval evaluates e with vars (an identifier's value: nil, a bool, a
// number of any Go kind, a string). An identifier missing from vars, or
// whose value is of another type, is an error.
func (e *Expr) Eval(vars map[string]any) (any, error) {
	return eval(e.root, vars)
}

func eval(n *node, vars map[string]any) (any, error) {
	switch n.kind {
	case kLit:
		return n.val, nil
	case kVar:
		v, ok := vars[n.name]
		if !ok {
			return nil, fmt.Errorf("%w %s", ErrUnknown, n.name)
		}
		return normal(n.name, v)
	case kNot:
		v, err := eval(n.l, vars)
		return !truthy(v), err
	case kAnd, kOr:
		l, err := eval(n.l, vars)
		if err != nil {
			return nil, err
		}
		if truthy(l) == (n.kind == kOr) {
			return truthy(l), nil
		}
		r, err := eval(n.r, vars)
		return truthy(r), err
	}
	l, err := eval(n.l, vars)
	if err != nil {
		return nil, err
	}
	r, err := eval(n.r, vars)
	if err != nil {
		return nil, err
	}
	switch n.kind {
	case kEq:
		return l == r, nil
	case kNe:
		return l != r, nil
	}
	return order(n.kind, l, r), nil
}

// order compares two numbers or two strings; anything else is false.
func order(k kind, l, r any) bool {
	c := 0
	switch a := l.(type) {
	case float64:
		b, ok := r.(float64)
		if !ok || math.IsNaN(a) || math.IsNaN(b) {
			return false
		}
		c = cmpF(a, b)
	case string:
		b, ok := r.(string)
		if !ok {
			return false
		}
		c = strings.Compare(a, b)
	default:
		return false
	}
	switch k {
	case kLt:
		return c < 0
	case kLe:
		return c <= 0
	case kGt:
		return c > 0
	}
	return c >= 0
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// normal turns a variable's value into one of the four kinds of value.
func normal(name string, v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, float64:
		return v, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case interface{ Float64() (float64, error) }: // json.Number
		return x.Float64()
	}
	return nil, fmt.Errorf("expr: %s is a %T, not null, a bool, a number or a string", name, v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	}
	return false
}

// Parse reads an expression.
func Parse(src string) (*Expr, error) {
	if len(src) > MaxLen {
		return nil, fmt.Errorf("expr: longer than %d bytes", MaxLen)
	}
	p := &parser{src: src, names: map[string]bool{}}
	p.next()
	n := p.or(0)
	if p.err == nil && p.tok.k != tEOF {
		p.fail("unexpected %s", p.tok)
	}
	if p.err != nil {
		return nil, p.err
	}
	e := &Expr{root: n, src: src}
	for name := range p.names {
		e.names = append(e.names, name)
	}
	slices.Sort(e.names)
	return e, nil
}

type tkind uint8

const (
	tEOF tkind = iota
	tIdent
	tNum
	tStr
	tOp
)

type token struct {
	k   tkind
	s   string // an identifier, an operator, a string's value
	n   float64
	pos int
}

func (t token) String() string {
	switch t.k {
	case tEOF:
		return "end of expression"
	case tNum:
		return fmt.Sprintf("number at %d", t.pos)
	case tStr:
		return fmt.Sprintf("string at %d", t.pos)
	}
	return fmt.Sprintf("%q at %d", t.s, t.pos)
}

type parser struct {
	src   string
	pos   int
	tok   token
	err   error
	names map[string]bool
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("expr: "+format, args...)
	}
	p.tok = token{k: tEOF, pos: len(p.src)}
}

var ops = []string{"===", "!==", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")"}

// next reads the next token into p.tok.
func (p *parser) next() {
	if p.err != nil {
		return
	}
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
	start := p.pos
	if p.pos == len(p.src) {
		p.tok = token{k: tEOF, pos: start}
		return
	}
	c := p.src[p.pos]
	switch {
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) && identByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{k: tIdent, s: p.src[start:p.pos], pos: start}
	case c >= '0' && c <= '9' || c == '.' || c == '-' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '.' || p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9'):
		p.pos++
		for p.pos < len(p.src) && (strings.IndexByte("0123456789.eE", p.src[p.pos]) >= 0 ||
			(p.src[p.pos] == '+' || p.src[p.pos] == '-') && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E')) {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil || math.IsInf(f, 0) {
			p.fail("bad number %q at %d", p.src[start:p.pos], start)
			return
		}
		p.tok = token{k: tNum, n: f, pos: start}
	case c == '"' || c == '\'':
		p.str(c)
	default:
		for _, op := range ops {
			if strings.HasPrefix(p.src[p.pos:], op) {
				p.pos += len(op)
				p.tok = token{k: tOp, s: op, pos: start}
				return
			}
		}
		p.fail("unexpected character %q at %d", c, start)
	}
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// str reads a string quoted by q, with JSON's escapes (and \' in single
// quotes).
func (p *parser) str(q byte) {
	start := p.pos
	var b strings.Builder
	p.pos++
	for {
		if p.pos >= len(p.src) {
			p.fail("string at %d is not closed", start)
			return
		}
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			p.tok = token{k: tStr, s: b.String(), pos: start}
			return
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				p.fail("string at %d is not closed", start)
				return
			}
			e := p.src[p.pos+1]
			if e == 'u' {
				if p.pos+6 > len(p.src) {
					p.fail("bad escape at %d", p.pos)
					return
				}
				r, err := strconv.ParseUint(p.src[p.pos+2:p.pos+6], 16, 16)
				if err != nil {
					p.fail("bad escape at %d", p.pos)
					return
				}
				b.WriteRune(rune(r))
				p.pos += 6
				continue
			}
			i := strings.IndexByte(`"'\/bfnrt`, e)
			if i < 0 {
				p.fail("bad escape at %d", p.pos)
				return
			}
			b.WriteByte("\"'\\/\b\f\n\r\t"[i])
			p.pos += 2
		case c < ' ':
			p.fail("control character in the string at %d", start)
			return
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

func (p *parser) is(op string) bool { return p.tok.k == tOp && p.tok.s == op }

func (p *parser) deep(d int) bool {
	if d > MaxDepth {
		p.fail("nested deeper than %d", MaxDepth)
		return true
	}
	return false
}

// or: and ("||" and)*
func (p *parser) or(d int) *node {
	if p.deep(d) {
		return nil
	}
	n := p.and(d + 1)
	for p.err == nil && p.is("||") {
		p.next()
		n = &node{kind: kOr, l: n, r: p.and(d + 1)}
	}
	return n
}

// and: equality ("&&" equality)*
func (p *parser) and(d int) *node {
	n := p.equality(d)
	for p.err == nil && p.is("&&") {
		p.next()
		n = &node{kind: kAnd, l: n, r: p.equality(d)}
	}
	return n
}

var eqOps = map[string]kind{"==": kEq, "===": kEq, "!=": kNe, "!==": kNe}
var relOps = map[string]kind{"<": kLt, "<=": kLe, ">": kGt, ">=": kGe}

// equality: relation (("=="|"==="|"!="|"!==") relation)*
func (p *parser) equality(d int) *node {
	n := p.relation(d)
	for p.err == nil && p.tok.k == tOp {
		k, ok := eqOps[p.tok.s]
		if !ok {
			break
		}
		p.next()
		n = &node{kind: k, l: n, r: p.relation(d)}
	}
	return n
}

// relation: unary (("<"|"<="|">"|">=") unary)*
func (p *parser) relation(d int) *node {
	n := p.unary(d)
	for p.err == nil && p.tok.k == tOp {
		k, ok := relOps[p.tok.s]
		if !ok {
			break
		}
		p.next()
		n = &node{kind: k, l: n, r: p.unary(d)}
	}
	return n
}

// unary: "!" unary | primary
func (p *parser) unary(d int) *node {
	if p.deep(d) {
		return nil
	}
	if p.is("!") {
		p.next()
		return &node{kind: kNot, l: p.unary(d + 1)}
	}
	return p.primary(d)
}

// primary: literal | identifier | "(" or ")"
func (p *parser) primary(d int) *node {
	t := p.tok
	switch t.k {
	case tNum:
		p.next()
		return &node{kind: kLit, val: t.n}
	case tStr:
		p.next()
		return &node{kind: kLit, val: t.s}
	case tIdent:
		p.next()
		switch t.s {
		case "true", "false":
			return &node{kind: kLit, val: t.s == "true"}
		case "null":
			return &node{kind: kLit}
		}
		p.names[t.s] = true
		return &node{kind: kVar, name: t.s}
	case tOp:
		if t.s == "(" {
			p.next()
			n := p.or(d + 1)
			if p.err == nil && !p.is(")") {
				p.fail("want ) at %d, got %s", p.tok.pos, p.tok)
			}
			p.next()
			return n
		}
	}
	p.fail("want a value at %d, got %s", t.pos, t)
	return nil
}
