// Thinking: the brain asked about a message, and asked to stop.

package companion

import (
	"context"
	"errors"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// think asks the brain, retrying once; a second failure becomes listen
// with importance 0 (docs/protocol.md: bad model output never stalls the room).
// It returns how long the successful call took (0 after a failure). With
// a brain that streams (e.words set), the vote is handed to Run the
// moment it is written (evVote) and the draft's sentences to e.words; a
// think whose vote has left is never asked again (its words may be being
// spoken), and e.words is finished whatever happens.
func (c *Companion) think(ctx context.Context, in brain.Input, e event) (t brain.Thought, took time.Duration) {
	if e.words != nil {
		defer func() { e.words.finish(t) }()
	}
	var err error
	voted := false
	for attempt := range 2 {
		tctx, cancel := context.WithTimeout(ctx, c.cfg.ThinkTimeout)
		start := time.Now()
		if e.words != nil {
			heard := brain.Heard{Said: e.words.said, Vote: func(v brain.Thought) {
				if v.Closing == "" {
					v.Closing = protocol.ClosingNone
				}
				if v.Validate() == nil {
					voted = true
					ev := e
					ev.kind, ev.thought = evVote, v
					c.push(ev, "vote")
				}
			}}
			t, err = c.cfg.Brain.(brain.Streamer).ThinkStream(tctx, in, heard)
		} else {
			t, err = c.cfg.Brain.Think(tctx, in)
		}
		took = time.Since(start)
		cancel()
		if err == nil {
			if t.Closing == "" {
				t.Closing = protocol.ClosingNone
			}
			if err = t.Validate(); err == nil {
				return t, took
			}
		}
		if ctx.Err() != nil || voted {
			break
		}
		c.log.Warn("brain failed", "attempt", attempt+1, "message", in.Message.Params.ID, "err", err)
	}
	listen := brain.Thought{State: protocol.Listen, Importance: 0, Closing: protocol.ClosingNone}
	if ctx.Err() != nil {
		return listen, 0 // cancelled: not needed any more (stopThinking), or shutting down
	}
	reason := "error"
	if errors.Is(err, context.DeadlineExceeded) {
		reason = "timeout"
	}
	c.cfg.Room.Metrics.BrainFailures.WithLabelValues(reason).Inc()
	c.status(Failed)
	return listen, 0
}

// stopThinking cancels the think for message id, or every think when id
// is "" (a user spoke: every older message is void): its model request is
// closed at once, and a vote it already sent is not taken back.
func (c *Companion) stopThinking(id string) {
	for mid, cancel := range c.thinks {
		if id == "" || mid == id {
			cancel()
			delete(c.thinks, mid)
			c.stopped.Add(mid)
		}
	}
}

// startThinking asks the brain about e's message (e.in) on a goroutine of
// its own, recalling by meaning first what it knows of people; the
// thought comes back to Run as e (evThought), and with a brain that
// streams its vote before it (evVote) and its draft in e.words.
func (c *Companion) startThinking(ctx context.Context, e event, people []string) {
	c.thinking++
	c.status(Thinking)
	if _, ok := c.cfg.Brain.(brain.Streamer); ok && !c.cfg.TwoCall {
		e.words = newWords()
	}
	tctx, cancel := context.WithCancel(ctx)
	c.thinks[e.id] = cancel
	in, m := e.in, e.in.Message
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		if people != nil {
			if fs, ok := c.mem.RecallByMeaning(tctx, m.Params.From, m.Params.Message, people); ok {
				in.Remembered = fs
			}
			e.in = in
		}
		e.thought, e.took = c.think(tctx, in, e)
		c.deliver(ctx, e)
	}()
}
