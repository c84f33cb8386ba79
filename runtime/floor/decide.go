package floor

import (
	"maps"
	"sort"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Decision is who speaks after one message, and why.
type Decision struct {
	Speaker string // "" when nobody speaks
	Reason  string // protocol.ReasonSelected, ReasonSpeak or ReasonRest
}

// Decide picks the next speaker from the votes for one message (docs/protocol.md,
// "Floor control (turn mode)", step 4):
//
//  1. voters whose closing is terminal never take the floor;
//  2. voters with selected=true first, highest importance wins;
//  3. then voters with state=speak, highest importance wins;
//  4. ties go to the voter that spoke least recently (lastSpoke holds a
//     sequence number per companion; absent means never), then to the
//     lowest id;
//  5. nobody eligible: the conversation rests.
//
// votes holds one State per voter (the last one received counts).
func Decide(votes map[string]protocol.StateParams, lastSpoke map[string]uint64) Decision {
	var selected, speak []protocol.StateParams
	for _, v := range votes {
		if v.Closing == protocol.ClosingTerminal {
			continue
		}
		switch {
		case v.Selected:
			selected = append(selected, v)
		case v.State == protocol.Speak:
			speak = append(speak, v)
		}
	}
	if len(selected) > 0 {
		return Decision{Speaker: best(selected, lastSpoke), Reason: protocol.ReasonSelected}
	}
	if len(speak) > 0 {
		return Decision{Speaker: best(speak, lastSpoke), Reason: protocol.ReasonSpeak}
	}
	return Decision{Reason: protocol.ReasonRest}
}

// Settled reports whether Decide's answer for votes is final while the
// voters in missing have not voted yet: the floor need not wait for them
// (issue 28). Each missing voter's strongest possible vote (selected,
// speak, the highest importance, not closing) is tried in turn; if none
// of them wins, no vote of theirs can: a weaker vote of the same voter
// ranks below it, and the winner of several is one of them. So a rest is
// never settled early (any missing voter may ask to speak), nor a
// speaker chosen by speak (a missing voter may be selected); a selected
// speaker at the highest importance is, when it wins the tie against
// every missing voter (it spoke less recently, or has the lower id).
func Settled(votes map[string]protocol.StateParams, missing []string, lastSpoke map[string]uint64) bool {
	if len(missing) == 0 {
		return true
	}
	d := Decide(votes, lastSpoke)
	if d.Speaker == "" {
		return false
	}
	with := maps.Clone(votes)
	for _, m := range missing {
		with[m] = protocol.StateParams{From: m, State: protocol.Speak, Importance: protocol.MaxImportance, Selected: true, Closing: protocol.ClosingNone}
		if Decide(with, lastSpoke).Speaker != d.Speaker {
			return false
		}
		delete(with, m)
	}
	return true
}

func best(c []protocol.StateParams, lastSpoke map[string]uint64) string {
	sort.Slice(c, func(i, j int) bool {
		a, b := c[i], c[j]
		if a.Importance != b.Importance {
			return a.Importance > b.Importance
		}
		la, oka := lastSpoke[a.From]
		lb, okb := lastSpoke[b.From]
		if oka != okb {
			return !oka // never spoke beats spoke
		}
		if la != lb {
			return la < lb
		}
		return a.From < b.From
	})
	return c[0].From
}
