package floor

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func v(from string, st protocol.Speech, imp float64, sel bool, cl protocol.Closing) protocol.StateParams {
	if cl == "" {
		cl = protocol.ClosingNone
	}
	return protocol.StateParams{From: from, MessageID: "m", State: st, Importance: imp, Selected: sel, Closing: cl}
}

func TestDecide(t *testing.T) {
	const (
		S = protocol.Speak
		L = protocol.Listen
	)
	tests := []struct {
		name      string
		votes     []protocol.StateParams
		lastSpoke map[string]uint64
		want      Decision
	}{
		{"selected beats higher speak", []protocol.StateParams{v("a", S, 9, false, ""), v("b", L, 2, true, "")}, nil,
			Decision{"b", protocol.ReasonSelected}},
		{"selected by importance", []protocol.StateParams{v("a", S, 3, true, ""), v("b", S, 7, true, ""), v("c", S, 10, false, "")}, nil,
			Decision{"b", protocol.ReasonSelected}},
		{"speak by importance", []protocol.StateParams{v("a", S, 3, false, ""), v("b", S, 6, false, ""), v("c", L, 10, false, "")}, nil,
			Decision{"b", protocol.ReasonSpeak}},
		{"tie to least recent speaker", []protocol.StateParams{v("a", S, 5, false, ""), v("b", S, 5, false, "")}, map[string]uint64{"a": 1, "b": 7},
			Decision{"a", protocol.ReasonSpeak}},
		{"tie to one that never spoke", []protocol.StateParams{v("a", S, 5, false, ""), v("b", S, 5, false, "")}, map[string]uint64{"a": 1},
			Decision{"b", protocol.ReasonSpeak}},
		{"tie to lowest id", []protocol.StateParams{v("c", S, 5, false, ""), v("b", S, 5, false, ""), v("d", S, 5, false, "")}, nil,
			Decision{"b", protocol.ReasonSpeak}},
		{"selected tie to least recent", []protocol.StateParams{v("a", S, 5, true, ""), v("b", S, 5, true, "")}, map[string]uint64{"a": 9, "b": 2},
			Decision{"b", protocol.ReasonSelected}},
		{"all listen rests", []protocol.StateParams{v("a", L, 5, false, ""), v("b", L, 9, false, "")}, nil,
			Decision{"", protocol.ReasonRest}},
		{"all terminal rests", []protocol.StateParams{v("a", S, 5, true, protocol.ClosingTerminal), v("b", S, 9, false, protocol.ClosingTerminal)}, nil,
			Decision{"", protocol.ReasonRest}},
		{"terminal selected is skipped", []protocol.StateParams{v("a", S, 9, true, protocol.ClosingTerminal), v("b", S, 1, false, protocol.ClosingClosing)}, nil,
			Decision{"b", protocol.ReasonSpeak}},
		{"closing voters may still speak", []protocol.StateParams{v("a", S, 4, false, protocol.ClosingPre)}, nil,
			Decision{"a", protocol.ReasonSpeak}},
		{"no votes rests", nil, nil, Decision{"", protocol.ReasonRest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			votes := map[string]protocol.StateParams{}
			for _, x := range tt.votes {
				votes[x.From] = x
			}
			if got := Decide(votes, tt.lastSpoke); got != tt.want {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Which decisions are final while votes are still owed (issue 28): only
// a selected speaker at the highest importance that wins the tie against
// every voter still missing.
func TestSettled(t *testing.T) {
	const (
		S   = protocol.Speak
		L   = protocol.Listen
		max = protocol.MaxImportance
	)
	tests := []struct {
		name      string
		votes     []protocol.StateParams
		missing   []string
		lastSpoke map[string]uint64
		want      bool
	}{
		{"nobody missing", []protocol.StateParams{v("a", L, 1, false, "")}, nil, nil, true},
		{"a rest can change: a missing voter may speak", []protocol.StateParams{v("a", L, 9, false, "")}, []string{"b"}, nil, false},
		{"all terminal still rests early? no: a missing voter may speak", []protocol.StateParams{v("a", S, 9, true, protocol.ClosingTerminal)}, []string{"b"}, nil, false},
		{"a speak winner can be outranked by a selected vote", []protocol.StateParams{v("a", S, max, false, "")}, []string{"b"}, nil, false},
		{"selected below the highest importance can be outranked", []protocol.StateParams{v("a", S, 9, true, "")}, []string{"b"}, nil, false},
		{"selected at the highest, never spoke, against one who spoke", []protocol.StateParams{v("b", L, max, true, "")}, []string{"a"}, map[string]uint64{"a": 3}, true},
		{"selected at the highest, but the missing one never spoke", []protocol.StateParams{v("b", S, max, true, "")}, []string{"a"}, map[string]uint64{"b": 3}, false},
		{"selected at the highest, spoke less recently than every missing one", []protocol.StateParams{v("c", S, max, true, "")}, []string{"a", "b"}, map[string]uint64{"a": 5, "b": 7, "c": 2}, true},
		{"one missing voter spoke even less recently", []protocol.StateParams{v("c", S, max, true, "")}, []string{"a", "b"}, map[string]uint64{"a": 1, "b": 7, "c": 2}, false},
		{"neither spoke: the lower id wins the tie", []protocol.StateParams{v("a", S, max, true, "")}, []string{"b", "c"}, nil, true},
		{"neither spoke: a missing lower id could win", []protocol.StateParams{v("b", S, max, true, "")}, []string{"a"}, nil, false},
		{"the settled winner among several votes", []protocol.StateParams{v("a", S, max, true, ""), v("b", S, max, false, ""), v("c", L, 2, false, "")}, []string{"d"}, nil, true},
		{"a terminal vote at the highest is no winner", []protocol.StateParams{v("a", S, max, true, protocol.ClosingTerminal), v("b", S, 3, false, "")}, []string{"c"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			votes := map[string]protocol.StateParams{}
			for _, x := range tt.votes {
				votes[x.From] = x
			}
			before := Decide(votes, tt.lastSpoke)
			if got := Settled(votes, tt.missing, tt.lastSpoke); got != tt.want {
				t.Fatalf("Settled = %v, want %v (Decide: %+v)", got, tt.want, before)
			}
			if len(votes) != len(tt.votes) || Decide(votes, tt.lastSpoke) != before {
				t.Fatal("Settled changed the votes")
			}
		})
	}
}

// Settled is exact: whenever it says final, no vote of the missing voters
// changes Decide's answer; whenever it says not, one does. Checked over
// every vote a missing voter may cast (a grid of importances).
func TestSettledIsExact(t *testing.T) {
	ids := []string{"a", "b", "c"}
	var all []protocol.StateParams
	for _, st := range []protocol.Speech{protocol.Speak, protocol.Listen} {
		for _, imp := range []float64{0, 5, protocol.MaxImportance} {
			for _, sel := range []bool{false, true} {
				for _, cl := range []protocol.Closing{protocol.ClosingNone, protocol.ClosingTerminal} {
					all = append(all, protocol.StateParams{State: st, Importance: imp, Selected: sel, Closing: cl})
				}
			}
		}
	}
	last := map[string]uint64{"b": 4, "c": 2}
	for _, voter := range ids {
		for _, vote := range all {
			vote.From = voter
			votes := map[string]protocol.StateParams{voter: vote}
			var missing []string
			for _, m := range ids {
				if m != voter {
					missing = append(missing, m)
				}
			}
			settled := Settled(votes, missing, last)
			want := Decide(votes, last).Speaker
			changes := false
			for _, m := range missing {
				for _, mv := range all {
					mv.From = m
					with := map[string]protocol.StateParams{voter: vote, m: mv}
					if Decide(with, last).Speaker != want {
						changes = true
					}
				}
			}
			if settled == changes {
				t.Errorf("%s votes %+v: Settled = %v, but a missing vote changes the decision: %v", voter, vote, settled, changes)
			}
		}
	}
}
