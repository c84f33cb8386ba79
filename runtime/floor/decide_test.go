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
