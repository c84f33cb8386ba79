package seen

import (
	"fmt"
	"testing"
)

func TestSetIsBoundedAndForgetsTheOldest(t *testing.T) {
	s := New(3)
	for i, c := range []struct {
		add  string
		want bool
	}{{"a", true}, {"b", true}, {"a", false}, {"c", true}, {"d", true}, {"a", true}, {"c", false}} {
		if got := s.Add(c.add); got != c.want {
			t.Fatalf("step %d: Add(%q) = %v, want %v", i, c.add, got, c.want)
		}
	}
	// After a, b, c, d, a: b and c went first... the set holds the last 3 added.
	for id, want := range map[string]bool{"a": true, "c": true, "d": true, "b": false} {
		if s.Has(id) != want {
			t.Errorf("Has(%q) = %v, want %v", id, s.Has(id), want)
		}
	}
	for i := range 1000 {
		s.Add(fmt.Sprint(i))
	}
	if s.Len() != 3 {
		t.Fatalf("len %d after 1000 adds, want 3", s.Len())
	}
}
