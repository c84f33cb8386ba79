// Closing (aikyo-closing): the stages this companion votes, moved on by
// the companion itself for a stubborn model, and max_turn.

package companion

import (
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// closer is the companion's own closing stages since the conversation
// (re)started (owned by Run).
type closer struct {
	stage   protocol.Closing // the furthest stage it voted
	vain    int              // closing asks its brain ignored since it last moved on
	forcing bool             // the companion moves the stage on itself
	over    bool             // forced to terminal: it listens until a user speaks
}

// close applies what the companion itself does to the closing stage of
// thought t for message id (asked: its brain was asked to close): the
// stage moved on for a brain that ignored CloseAsks asks, and max_turn,
// as aikyo (count States; at the limit force terminal). The State that
// goes terminal is logged with what ended the conversation.
func (c *Companion) close(id string, asked bool, t brain.Thought) brain.Thought {
	cl := &c.closer
	if cl.over {
		t.State, t.Selected, t.Closing = protocol.Listen, false, protocol.ClosingTerminal
		return t
	}
	if !t.Closing.Valid() {
		t.Closing = protocol.ClosingNone
	}
	by := "model"
	switch {
	case t.Closing.Rank() > cl.stage.Rank():
		cl.vain = 0 // the brain winds down itself
	case asked && !cl.forcing:
		if cl.vain++; cl.vain >= CloseAsks {
			cl.forcing = true
			c.log.Info("the brain ignored the request to close; the companion moves the closing stage on itself", "message", id, "asks", cl.vain, "stage", cl.stage)
		}
	}
	if cl.forcing && t.Closing.Rank() <= cl.stage.Rank() {
		t.Closing, by = nextStage(cl.stage), "repetition judge"
	}
	if c.cfg.MaxTurn > 0 {
		switch {
		case t.Closing == protocol.ClosingTerminal:
			c.count = 0
		case c.count >= c.cfg.MaxTurn:
			t.Closing, by = protocol.ClosingTerminal, "max_turn"
			c.count = 0
		default:
			c.count++
		}
	}
	was := cl.stage
	if t.Closing.Rank() > cl.stage.Rank() {
		cl.stage = t.Closing
	}
	if t.Closing != protocol.ClosingTerminal {
		return t
	}
	if by != "model" {
		t.State, t.Selected = protocol.Listen, false
	}
	if by == "repetition judge" {
		cl.over = true
	}
	if by != "model" || was != protocol.ClosingTerminal {
		c.log.Info("terminal: the conversation ends for this companion", "message", id, "by", by)
	}
	return t
}

// nextStage is the closing stage after s (terminal stays terminal).
func nextStage(s protocol.Closing) protocol.Closing {
	switch s {
	case protocol.ClosingTerminal, protocol.ClosingClosing:
		return protocol.ClosingTerminal
	case protocol.ClosingPre:
		return protocol.ClosingClosing
	}
	return protocol.ClosingPre
}
