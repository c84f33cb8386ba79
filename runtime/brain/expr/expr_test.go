package expr

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHolds(t *testing.T) {
	vars := map[string]any{"already_replied": false, "need_response": true, "mood": "sad", "count": 3, "score": 2.5, "nothing": nil, "n": json.Number("7"),
		"profile": map[string]any{"x": 1, "inner": map[string]any{"ok": true}}, "tags": []any{"a", "b"}}
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
		{`.5 == 0.5 && -.5 < 0`, true},
		{`  ( ( need_response ) )  `, true},
		{`need_response == true == true`, true}, // left to right
		{`false == false && true`, true},        // == binds tighter than &&
		{`true || false && false`, true},        // && binds tighter than ||
		{`!need_response == false`, true},       // ! binds tighter than ==
		{`count > 1 == true`, true},             // < binds tighter than ==
		{`already_replied == false || count > 9`, true},
		// CEL (aikyo's cel-js): in, size(), a.b, +, lists
		{`mood in ["sad", "angry"]`, true},
		{`mood in ['happy']`, false},
		{`count in [1, 2, 3]`, true},
		{`count in []`, false},
		{`!(mood in ["sad"])`, false},
		{`"x" in profile`, true}, // a map's keys
		{`"nope" in profile`, false},
		{`size(mood) == 3`, true},
		{`mood.size() == 3`, true},
		{`size("日本語") == 3`, true}, // characters, not bytes
		{`size([1, 2]) == 2`, true},
		{`size(profile) == 2`, true},
		{`size(mood) > 2 && mood != "happy"`, true},
		{`profile.x == 1`, true},
		{`profile.inner.ok`, true},
		{`profile.inner.ok == true && profile.x >= 1`, true},
		{`count + 1 == 4`, true},
		{`count + 1 + score == 6.5`, true},
		{`mood + "!" == "sad!"`, true},
		{`"a" + 'b' in ["ab"]`, true}, // + binds tighter than in
		{`[1] + [2] == [1, 2]`, true},
		{`[1, "a", null, [true]] == [1, 'a', null, [true]]`, true},
		{`[1, 2] == [2, 1]`, false},
		{`[1] == 1`, false},
		{`profile == profile`, true},
		{`tags in [["a", "b"]]`, true},
		{`size(tags) == 2 && "b" in tags`, true},
		{`count >= 3 && mood in ["sad"] || false`, true},
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
	e, err = Parse(`m.x.y == 1 && size(n.z) > 0 && k.size() > 0 && o == 1`)
	if err != nil {
		t.Fatal(err)
	}
	if got, maps := e.Names(), e.Maps(); !slices.Equal(got, []string{"k", "m", "n", "o"}) || !slices.Equal(maps, []string{"m", "n"}) {
		t.Errorf("names %v, maps %v", got, maps)
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
		`"bad \q"`, `"\u12"`, `1.2.3`, `1e`, `1e999`, `!`, `()`, `a ==! `, `a.`, `a.1`, `[1, 2`, `[1 2]`, `[,]`,
		`in`, `a in`, `in a`, `a +`, `+ a`, `size()`, `size(a, b)`, `a.size(1)`, `a.5`, `-.5.b`,
		"\"a\nb\"", `#`, strings.Repeat("(", MaxDepth+2) + "a" + strings.Repeat(")", MaxDepth+2),
		strings.Repeat("[", MaxDepth+2) + "a" + strings.Repeat("]", MaxDepth+2),
		strings.Repeat("size(", MaxDepth+2) + "a" + strings.Repeat(")", MaxDepth+2),
		strings.Repeat("!", MaxDepth+2) + "a", strings.Repeat("a", MaxLen+1),
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) took it", src)
		}
	}
}

// What is outside the subset is named, never taken for something else
// (a.b was refused as "bad number" once).
func TestParseNamesWhatIsOutside(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`a * b`, "multiplication is not in the subset"},
		{`a - b`, "subtraction is not in the subset"},
		{`count-1 > 2`, "subtraction is not in the subset"},
		{`(a / b)`, "division is not in the subset"},
		{`a % 2 == 0`, "remainder is not in the subset"},
		{`a ? b : c`, "the conditional ?: is not in the subset"},
		{`{"a": 1}`, "a map literal is not in the subset"},
		{`a[0]`, "an index"},
		{`has(a.b)`, "has() at 0 is not in the subset: the one function is size()"},
		{`a.exists(x, x > 1)`, "exists() at 2 is not in the subset"},
		{`name.startsWith("a")`, "startsWith() at 5 is not in the subset"},
		{`a.`, "want a field's name after . at 2"},
	} {
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "bad number") {
			t.Errorf("Parse(%q): %v, want %q", c.src, err, c.want)
		}
	}
}

// An operation on a value of a type it does not take is ErrType, named.
func TestEvalTypeErrors(t *testing.T) {
	vars := map[string]any{"b": true, "s": "x", "n": 1, "m": map[string]any{"k": 1}, "l": []any{1}}
	for _, c := range []struct{ src, want string }{
		{`size(b) == 1`, "size of a bool"},
		{`b.x`, ".x of a bool, not a map"},
		{`s in s`, "in takes a list or a map on its right, not a string"},
		{`1 in m`, "a map's keys are strings, not a number"},
		{`n + s == 1`, "a number + a string"},
		{`l + m == l`, "a list + a map"},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.src, err)
		}
		if _, err := e.Holds(vars); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	e, _ := Parse(`m.nope == 1`)
	if _, err := e.Holds(vars); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a missing field: %v", err)
	}
}

// + is bounded: a string or list it builds is at most MaxValue long, so a
// condition's evaluation stays linear in its length.
func TestAddIsBounded(t *testing.T) {
	e, err := Parse(strings.TrimSuffix(strings.Repeat("s + ", 20), " + ") + ` == ""`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Holds(map[string]any{"s": strings.Repeat("x", MaxValue/8)})
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("20 × %d bytes: %v", MaxValue/8, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`already_replied == false`, `need_response === true && !(a || b)`, `x >= -1.5e2`, `'a\'b' != "c"`, `((a))`, `!a == null`,
		`mood in ["sad", "angry"]`, `size(topic) > 3`, `m.a.size() == 1 + 2`, `a + "x" in m`, `[1, [2]] == l`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		vars := map[string]any{}
		for i, n := range e.Names() {
			switch i % 6 {
			case 0:
				vars[n] = true
			case 1:
				vars[n] = 1.5
			case 2:
				vars[n] = "s"
			case 3:
				vars[n] = nil
			case 4:
				vars[n] = []any{"s", 1.5}
			default:
				vars[n] = map[string]any{"a": 1, "b": map[string]any{"c": "d"}}
			}
		}
		// With every name given, only a value of the wrong type or a
		// missing field of a map may fail it.
		if _, err := e.Holds(vars); err != nil && !errors.Is(err, ErrType) && !strings.Contains(err.Error(), "field") {
			t.Fatalf("%q with every name given: %v", src, err)
		}
		if e.String() != src {
			t.Fatal("String changed")
		}
	})
}
