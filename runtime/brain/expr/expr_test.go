package expr

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHolds(t *testing.T) {
	vars := map[string]any{"already_replied": false, "need_response": true, "mood": "sad", "count": 3, "score": 2.5, "nothing": nil, "n": json.Number("7")}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`already_replied == false`, true},
		{`already_replied === false`, true},
		{`already_replied != false`, false},
		{`already_replied !== true`, true},
		{`need_response === true && already_replied == false`, true},
		{`need_response && already_replied`, false},
		{`need_response || already_replied`, true},
		{`!already_replied`, true},
		{`!!need_response`, true},
		{`!(need_response && !already_replied)`, false},
		{`mood == "sad"`, true},
		{`mood === 'sad'`, true},
		{`mood == "happy" || mood == "sad"`, true},
		{`mood != "sad"`, false},
		{`count >= 3`, true},
		{`count > 3`, false},
		{`count < 3.5 && score <= 2.5`, true},
		{`count == 3`, true},
		{`count == "3"`, false}, // no conversion, as ===
		{`count == true`, false},
		{`score > -1`, true},
		{`n == 7`, true},
		{`nothing == null`, true},
		{`nothing != null`, false},
		{`mood < "ta"`, true},
		{`mood < 3`, false}, // a string and a number are not ordered
		{`true`, true},
		{`0`, false},
		{`""`, false},
		{`mood`, true},
		{`null`, false},
		{`a || b`, true}, // short circuit: b never read? no: a is missing below
		{`1 == 1 || x`, true},
		{`1 == 2 && x`, false},
		{`"a\"b" == 'a"b'`, true},
		{`"\u00e9" == "é"`, true},
		{`1e3 == 1000`, true},
		{`  ( ( need_response ) )  `, true},
		{`need_response == true == true`, true}, // left to right
		{`false == false && true`, true},        // == binds tighter than &&
		{`true || false && false`, true},        // && binds tighter than ||
		{`!need_response == false`, true},       // ! binds tighter than ==
		{`count > 1 == true`, true},             // < binds tighter than ==
		{`already_replied == false || count > 9`, true},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		v := vars
		if c.src == `a || b` {
			v = map[string]any{"a": true}
		}
		got, err := e.Holds(v)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	e, err := Parse(`b == 1 && (a || !b) && c != "x" && true && null == d`)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Names(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("names %v", got)
	}
}

func TestEvalErrors(t *testing.T) {
	e, _ := Parse(`a == 1 && missing`)
	if _, err := e.Holds(map[string]any{"a": 1}); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing variable: %v", err)
	}
	e, _ = Parse(`a`)
	if _, err := e.Holds(map[string]any{"a": []int{1}}); err == nil {
		t.Error("a slice was taken as a value")
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		``, `   `, `a ==`, `== a`, `(a`, `a)`, `a b`, `a = b`, `a & b`, `a | b`, `"open`, `'open`,
		`"bad \q"`, `"\u12"`, `1.2.3`, `1e`, `1e999`, `a.b`, `a[0]`, `a + b`, `f(a)`, `!`, `()`, `a ==! `,
		"\"a\nb\"", `#`, strings.Repeat("(", MaxDepth+2) + "a" + strings.Repeat(")", MaxDepth+2),
		strings.Repeat("!", MaxDepth+2) + "a", strings.Repeat("a", MaxLen+1),
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) took it", src)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`already_replied == false`, `need_response === true && !(a || b)`, `x >= -1.5e2`, `'a\'b' != "c"`, `((a))`, `!a == null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		vars := map[string]any{}
		for i, n := range e.Names() {
			switch i % 4 {
			case 0:
				vars[n] = true
			case 1:
				vars[n] = 1.5
			case 2:
				vars[n] = "s"
			default:
				vars[n] = nil
			}
		}
		if _, err := e.Holds(vars); err != nil {
			t.Fatalf("%q with every name given: %v", src, err)
		}
		if e.String() != src {
			t.Fatal("String changed")
		}
	})
}
