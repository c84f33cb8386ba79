package floor

import (
	"sort"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Decision is who speaks after one message, and why.
type Decision struct {
	Speaker string // "" when nobody speaks
	Reason  string // protocol.ReasonSelected, ReasonSpeak or ReasonRest
}

// Decide picks the next speaker from the votes for one message (DESIGN.md,
// "Floor control" rule 3):
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
