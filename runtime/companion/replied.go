package companion

import (
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Replies (aikyo's already_replied). A person's message carries, in its
// brain input's Events, whether THIS companion has itself answered that
// person before: spoken a turn it was granted for a message of theirs,
// with its words in the room. Hearing a person is not answering them, and
// another companion's answer is not this one's: in a room of two, the
// one that never spoke to a person still introduces itself on their
// second message. The rules' answer to a memory command ("forget me")
// is not a reply.
//
// The record is this run's (bounded at maxPresent people) and, with a
// memory, the store's met record (memory.Store.Touch, written when the
// companion answers), which lasts across restarts until a "forget me".

// known are the event values the runtime knows exactly for m: for a
// person's message, whether this companion has answered them.
func (c *Companion) known(m protocol.Message) map[string]any {
	p := m.Params.From
	if !c.isUser(p) {
		return nil
	}
	return map[string]any{KnownMet: c.touched[p] || c.mem != nil && c.mem.Touched(p)}
}

// replied records that this companion answered the author of the message
// it was granted the turn for (its words, said, went to the room).
func (c *Companion) replied(grant string, said *protocol.Message) {
	tf, ok := c.thoughts[grant]
	if !ok || said == nil || tf.ruled {
		return // a memory command's answer (after a "forget me" above all) records nobody
	}
	if spoken, ok := said.Params.Metadata[protocol.MetaSpoken].(bool); ok && !spoken {
		return // the body did not say it: nobody was answered
	}
	p := tf.in.Message.Params.From
	if !c.isUser(p) || c.touched[p] {
		return
	}
	if len(c.touched) >= maxPresent {
		for old := range c.touched { // one goes; the store still knows it
			delete(c.touched, old)
			break
		}
	}
	c.touched[p] = true
	if c.mem != nil {
		c.mem.Touch(p)
	}
}
