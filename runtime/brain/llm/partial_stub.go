package llm

import (
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// TEMPORARY stub until the parse branch merges.
type Partial struct{ draft bool; text string }

func NewPartial(draft bool) *Partial          { return &Partial{draft: draft} }
func (p *Partial) Add(piece string)             { p.text += piece }
func (p *Partial) Vote() (brain.Thought, bool) { return brain.Thought{}, false }
func (p *Partial) Said() (string, protocol.Emotion, bool) { return "", "", false }
