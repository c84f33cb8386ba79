package stt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckRate(t *testing.T) {
	for _, tc := range []struct {
		rate int
		ok   bool
	}{{16000, true}, {8000, true}, {48000, true}, {192000, true}, {0, false}, {-1, false}, {7999, false}, {192001, false}} {
		if err := CheckRate(tc.rate); (err == nil) != tc.ok {
			t.Errorf("CheckRate(%d) = %v, want ok=%v", tc.rate, err, tc.ok)
		}
	}
}

func TestAppendLE16(t *testing.T) {
	got := AppendLE16([]byte{9}, []int16{1, -2, 0x1234})
	want := []byte{9, 1, 0, 0xfe, 0xff, 0x34, 0x12}
	if string(got) != string(want) {
		t.Fatalf("AppendLE16 = %x, want %x", got, want)
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	all := []error{ErrEmpty, ErrOverflow, ErrAborted, ErrFinished}
	for i, a := range all {
		w := fmt.Errorf("engine x: %w", a)
		for j, b := range all {
			if errors.Is(w, b) != (i == j) {
				t.Errorf("errors.Is(%v, %v) = %v", w, b, i != j)
			}
		}
	}
}

func TestLifecycle(t *testing.T) {
	var l Lifecycle
	if l.Done() != nil || l.Finish() != nil {
		t.Fatal("a new session refused")
	}
	if !errors.Is(l.Done(), ErrFinished) || !errors.Is(l.Finish(), ErrFinished) {
		t.Fatal("a finished session took more")
	}
	if !l.Abort() || l.Abort() || !l.Aborted() || !errors.Is(l.Done(), ErrAborted) {
		t.Fatal("Abort is once, and then the session says so")
	}
}

// Newest holds the newest hypothesis not yet read: a Put replaces one
// waiting, never blocks, and does nothing after Close; what waited when
// it closed is still read.
func TestNewest(t *testing.T) {
	tests := []struct {
		name  string
		puts  []string
		close bool
		want  []string // read until empty (or closed)
	}{
		{"nothing", nil, false, nil},
		{"one", []string{"my"}, false, []string{"my"}},
		{"the newest replaces", []string{"my", "my sister", "my sister is"}, false, []string{"my sister is"}},
		{"closed keeps what waited", []string{"my", "my sister"}, true, []string{"my sister"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNewest()
			for _, p := range tt.puts {
				n.Put(Partial{Text: p})
			}
			if tt.close {
				n.Close()
				n.Close() // idempotent
				n.Put(Partial{Text: "after close"})
			}
			var got []string
		read:
			for {
				select {
				case p, ok := <-n.C():
					if !ok {
						break read
					}
					got = append(got, p.Text)
				default:
					break read
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
}
