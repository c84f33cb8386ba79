package companion

import (
	"context"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// say answers a person's request to say m's words aloud (protocol.MetaSay)
// by the rules: a vote to speak them, word for word, when granted.
func (c *Companion) say(ctx context.Context, m protocol.Message, e event) {
	e.thought = brain.Thought{State: protocol.Speak, Importance: 9, Selected: true, Closing: protocol.ClosingNone,
		Draft: m.Params.Message, Emotion: protocol.EmotionNeutral, To: []string{m.Params.From}}
	c.vote(ctx, e, false)
	tf := c.thoughts[m.Params.ID]
	tf.ruled = true
	c.thoughts[m.Params.ID] = tf
}
