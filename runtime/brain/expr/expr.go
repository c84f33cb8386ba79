// Package expr evaluates the conditions of a companion card's events
// (aikyo's `events.conditions[].expression`): small boolean expressions
// over the card's event parameters, such as
//
//	already_replied == false
//	need_response == true && !(mood in ["sad", "angry"] || size(topic) > 40)
//
// # Why a subset of our own
//
// aikyo evaluates these as CEL (Common Expression Language, with
// cel-js). A general expression library was measured against the
// daemon's binary budget (chorusd for linux/arm64, -trimpath -s -w, must
// stay ≤16 MB): github.com/expr-lang/expr v1.17.8 adds about 2.2 MB to a
// minimal program, seven times the 300 KB an expression language may
// take. This package is a few hundred lines and covers the part of CEL
// that companion cards write, with JavaScript's === and !== beside it
// (cards written for aikyo's first, JavaScript evaluator use them).
//
// # Language
//
//   - literals: true, false, null, numbers (3, -1.5, .5, 2e3),
//     strings in double or single quotes with JSON's escapes, and lists
//     [a, b, c]
//   - identifiers: [A-Za-z_][A-Za-z0-9_]*, the card's parameters, and a
//     map's field: a.b
//   - comparison: == and === (equal: the same type and value, no
//     conversion; lists and maps element by element), != and !== (not
//     equal), and <, <=, >, >= between two numbers or two strings (else
//     false)
//   - membership: x in list (x equals an element), key in map
//   - size(x) and x.size(): a string's characters, a list's elements, a
//     map's keys
//   - +: two numbers' sum, two strings or two lists joined
//   - logic: ! (not), && (and), || (or), with short circuits;
//     parentheses group
//
// Precedence, from the loosest: ||, &&, == != === !==, < <= > >= in, +,
// !, then a field or size() after a value. A value is null, a bool, a
// float64, a string, a list ([]any) or a map (map[string]any); && and
// || give a bool, and a value is true as JavaScript's truthiness says
// (false, 0, NaN, "" and null are false; a list or a map is true).
// Anything else of CEL (-, *, /, %, ?:, indexes, other functions and
// macros) is refused by Parse, naming it. An expression is at most
// MaxLen bytes, nested at most MaxDepth deep, and a string or list that +
// builds is at most MaxValue bytes or elements: its evaluation is linear
// in its length.
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
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of an expression.
const (
	MaxLen   = 1000
	MaxDepth = 32
	MaxValue = 64 << 10 // bytes of a string, elements of a list, that + builds
)

// Expr is a parsed expression.
type Expr struct {
	root   *node
	names  []string
	fields []string
	src    string
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
	kIn    // l in r
	kAdd   // l + r
	kList  // [args...]
	kSize  // size(l)
	kField // l.name
)

type node struct {
	kind kind
	val  any    // kLit
	name string // kVar, kField
	l, r *node
	args []*node // kList
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Names are the identifiers the expression uses, sorted, each once.
func (e *Expr) Names() []string { return slices.Clone(e.names) }

// Maps are the identifiers whose field the expression reads (a in a.b),
// sorted, each once: their values must be maps.
func (e *Expr) Maps() []string { return slices.Clone(e.fields) }

// ErrUnknown is returned (wrapped) by Eval for an identifier that has no
// value, or a map's field that it does not have.
var ErrUnknown = errors.New("expr: no value for")

// ErrType is returned (wrapped) by Eval for an operation on a value of a
// type it does not take (size of a bool, a field of a string, 1 + "a").
var ErrType = errors.New("expr: wrong type")

// Holds evaluates e with vars and reports whether its value is true.
func (e *Expr) Holds(vars map[string]any) (bool, error) {
	v, err := e.Eval(vars)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

// Eval evaluates e with vars (an identifier's value: nil, a bool, a
// number of any Go kind, a string, a []any or a map[string]any of
// those). An identifier missing from vars, or whose value is of another
// type, is an error.
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
		return normal(n.name, v, 0)
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
	case kList:
		out := make([]any, 0, len(n.args))
		for _, a := range n.args {
			v, err := eval(a, vars)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case kSize, kField:
		v, err := eval(n.l, vars)
		if err != nil {
			return nil, err
		}
		if n.kind == kSize {
			return size(v)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: .%s of %s, not a map", ErrType, n.name, typeName(v))
		}
		f, ok := m[n.name]
		if !ok {
			return nil, fmt.Errorf("%w field %s", ErrUnknown, n.name)
		}
		return f, nil
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
		return equal(l, r), nil
	case kNe:
		return !equal(l, r), nil
	case kIn:
		return in(l, r)
	case kAdd:
		return add(l, r)
	}
	return order(n.kind, l, r), nil
}

// equal reports whether a and b are of one type and equal (lists and
// maps element by element).
func equal(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case nil, bool, float64, string:
		switch b.(type) {
		case []any, map[string]any:
			return false
		}
		return a == b
	}
	return false
}

// in is CEL's membership: x in a list, a key in a map.
func in(x, coll any) (bool, error) {
	switch c := coll.(type) {
	case []any:
		return slices.ContainsFunc(c, func(e any) bool { return equal(x, e) }), nil
	case map[string]any:
		k, ok := x.(string)
		if !ok {
			return false, fmt.Errorf("%w: a map's keys are strings, not %s", ErrType, typeName(x))
		}
		_, has := c[k]
		return has, nil
	}
	return false, fmt.Errorf("%w: in takes a list or a map on its right, not %s", ErrType, typeName(coll))
}

// size is a string's characters, a list's elements, a map's keys.
func size(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return float64(utf8.RuneCountInString(x)), nil
	case []any:
		return float64(len(x)), nil
	case map[string]any:
		return float64(len(x)), nil
	}
	return nil, fmt.Errorf("%w: size of %s (it takes a string, a list or a map)", ErrType, typeName(v))
}

// add is + of two numbers, two strings or two lists.
func add(l, r any) (any, error) {
	switch a := l.(type) {
	case float64:
		if b, ok := r.(float64); ok {
			return a + b, nil
		}
	case string:
		if b, ok := r.(string); ok {
			if len(a)+len(b) > MaxValue {
				return nil, fmt.Errorf("%w: + builds a string longer than %d bytes", ErrType, MaxValue)
			}
			return a + b, nil
		}
	case []any:
		if b, ok := r.([]any); ok {
			if len(a)+len(b) > MaxValue {
				return nil, fmt.Errorf("%w: + builds a list longer than %d elements", ErrType, MaxValue)
			}
			return slices.Concat(a, b), nil
		}
	}
	return nil, fmt.Errorf("%w: %s + %s (+ takes two numbers, two strings or two lists)", ErrType, typeName(l), typeName(r))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
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

// normal turns a variable's value into one of the kinds of value; lists
// and maps are taken up to MaxDepth deep.
func normal(name string, v any, depth int) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, float64:
		return v, nil
	case []any:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("%w: %s is nested deeper than %d", ErrType, name, MaxDepth)
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normal(name, e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("%w: %s is nested deeper than %d", ErrType, name, MaxDepth)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normal(name, e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
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
	return nil, fmt.Errorf("%w: %s is a %T, not null, a bool, a number, a string, a list or a map", ErrType, name, v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	case []any, map[string]any:
		return true
	}
	return false
}

// Parse reads an expression.
func Parse(src string) (*Expr, error) {
	if len(src) > MaxLen {
		return nil, fmt.Errorf("expr: longer than %d bytes", MaxLen)
	}
	p := &parser{src: src, names: map[string]bool{}, fields: map[string]bool{}}
	p.next()
	n := p.or(0)
	if p.err == nil && p.tok.k != tEOF {
		p.fail("unexpected %s", p.tok)
	}
	if p.err != nil {
		return nil, p.err
	}
	e := &Expr{root: n, src: src}
	e.names = slices.Sorted(maps.Keys(p.names))
	e.fields = slices.Sorted(maps.Keys(p.fields))
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
	case tOp:
		if what, ok := outside[t.s]; ok {
			return fmt.Sprintf("%q at %d (%s is not in the subset of CEL this evaluator takes)", t.s, t.pos, what)
		}
	}
	return fmt.Sprintf("%q at %d", t.s, t.pos)
}

type parser struct {
	src    string
	pos    int
	tok    token
	err    error
	names  map[string]bool
	fields map[string]bool // names whose field is read
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("expr: "+format, args...)
	}
	p.tok = token{k: tEOF, pos: len(p.src)}
}

var ops = []string{"===", "!==", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ",", ".", "+",
	"-", "*", "/", "%", "?", ":", "{", "}"} // the last ones only to be named as outside the subset

// outside are the operators of CEL that the subset leaves out.
var outside = map[string]string{"-": "subtraction", "*": "multiplication", "/": "division", "%": "remainder",
	"?": "the conditional ?:", ":": "the conditional ?:", "{": "a map literal", "}": "a map literal"}

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
	prev := p.tok // after a value, - is subtraction, not a number's sign
	afterValue := prev.k == tNum || prev.k == tStr || prev.k == tIdent && prev.s != "in" || prev.k == tOp && (prev.s == ")" || prev.s == "]")
	switch {
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) && identByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{k: tIdent, s: p.src[start:p.pos], pos: start}
	case c >= '0' && c <= '9' || !afterValue && (c == '.' && p.digitAt(p.pos+1) || c == '-' && (p.digitAt(p.pos+1) || p.at(p.pos+1) == '.' && p.digitAt(p.pos+2))):
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

func (p *parser) at(i int) byte {
	if i < len(p.src) {
		return p.src[i]
	}
	return 0
}

func (p *parser) digitAt(i int) bool { return p.at(i) >= '0' && p.at(i) <= '9' }

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

// relation: additive (("<"|"<="|">"|">="|"in") additive)*
func (p *parser) relation(d int) *node {
	n := p.additive(d)
	for p.err == nil {
		k, ok := relOps[p.tok.s]
		switch {
		case p.tok.k == tIdent && p.tok.s == "in":
			k, ok = kIn, true
		case p.tok.k != tOp:
			ok = false
		}
		if !ok {
			break
		}
		p.next()
		n = &node{kind: k, l: n, r: p.additive(d)}
	}
	return n
}

// additive: unary ("+" unary)*
func (p *parser) additive(d int) *node {
	n := p.unary(d)
	for p.err == nil && p.is("+") {
		p.next()
		n = &node{kind: kAdd, l: n, r: p.unary(d)}
	}
	return n
}

// unary: "!" unary | member
func (p *parser) unary(d int) *node {
	if p.deep(d) {
		return nil
	}
	if p.is("!") {
		p.next()
		return &node{kind: kNot, l: p.unary(d + 1)}
	}
	return p.member(d)
}

// member: primary ("." identifier | "." "size" "(" ")")*
func (p *parser) member(d int) *node {
	n := p.primary(d)
	if p.err == nil && p.is("[") {
		p.fail("an index ([ at %d) is not in the subset of CEL this evaluator takes", p.tok.pos)
		return nil
	}
	for p.err == nil && p.is(".") {
		p.next()
		t := p.tok
		if t.k != tIdent {
			p.fail("want a field's name after . at %d, got %s", t.pos, t)
			return nil
		}
		p.next()
		if !p.is("(") {
			if n.kind == kVar {
				p.fields[n.name] = true
			}
			n = &node{kind: kField, l: n, name: t.s}
			continue
		}
		if t.s != "size" {
			p.fail("%s() at %d is not in the subset: the one function is size()", t.s, t.pos)
			return nil
		}
		p.next()
		if !p.is(")") {
			p.fail("want ) at %d: x.size() takes no argument, got %s", p.tok.pos, p.tok)
			return nil
		}
		p.next()
		n = &node{kind: kSize, l: n}
	}
	return n
}

// primary: literal | identifier | "size" "(" or ")" | "[" (or ("," or)*)? "]" | "(" or ")"
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
		case "in":
			p.fail("want a value at %d, got %q", t.pos, t.s)
			return nil
		}
		if p.is("(") {
			if t.s != "size" {
				p.fail("%s() at %d is not in the subset: the one function is size()", t.s, t.pos)
				return nil
			}
			p.next()
			n := p.or(d + 1)
			if p.err == nil && !p.is(")") {
				p.fail("want ) at %d: size() takes one argument, got %s", p.tok.pos, p.tok)
			}
			p.next()
			return &node{kind: kSize, l: n}
		}
		p.names[t.s] = true
		return &node{kind: kVar, name: t.s}
	case tOp:
		switch t.s {
		case "(":
			p.next()
			n := p.or(d + 1)
			if p.err == nil && !p.is(")") {
				p.fail("want ) at %d, got %s", p.tok.pos, p.tok)
			}
			p.next()
			return n
		case "[":
			p.next()
			n := &node{kind: kList}
			for p.err == nil && !p.is("]") {
				n.args = append(n.args, p.or(d+1))
				if p.err == nil && !p.is("]") && !p.is(",") {
					p.fail("want , or ] at %d, got %s", p.tok.pos, p.tok)
				}
				if p.is(",") {
					p.next()
				}
			}
			p.next()
			return n
		}
	}
	p.fail("want a value at %d, got %s", t.pos, t)
	return nil
}
