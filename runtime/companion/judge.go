// The repetition judges: the model asked now and then, the local score always.

package companion

import (
	"context"
	"errors"
	"slices"
)

// judging is the model repetition judge's book (owned by Run).
type judging struct {
	since   int     // messages since the judge was last asked
	busy    bool    // a question is out
	gen     uint64  // bumped when a user restarts the conversation: older verdicts are void
	verdict float64 // the latest verdict
	ok      bool    // verdict holds
}

// repeats says which judge finds the conversation repeating ("local" or
// "model"), or "" when neither does.
func (c *Companion) repeats() string {
	switch {
	case c.cfg.NoRepetition:
		return ""
	case c.judge.Score(c.texts()) > c.cfg.Threshold:
		return "local"
	case c.rep.ok && c.rep.verdict > c.cfg.Threshold:
		return "model"
	}
	return ""
}

// askJudge asks the model's repetition judge about the last window, at most
// once every JudgeEvery messages and one question at a time, on its own
// goroutine: nothing waits for it (the verdict comes back as evJudged).
func (c *Companion) askJudge(ctx context.Context) {
	c.rep.since++
	if c.cfg.Judge == nil || c.cfg.NoRepetition || c.rep.busy || c.rep.since < c.cfg.JudgeEvery || len(c.history) < 2 {
		return
	}
	window := c.history
	if len(window) > c.cfg.Window {
		window = window[len(window)-c.cfg.Window:]
	}
	window = slices.Clone(window)
	c.rep.since, c.rep.busy = 0, true
	gen, lang := c.rep.gen, c.cfg.Card.Language
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		jctx, cancel := context.WithTimeout(ctx, c.cfg.JudgeTimeout)
		score, err := c.cfg.Judge.JudgeRepetition(jctx, lang, window)
		cancel()
		c.deliver(ctx, event{kind: evJudged, score: score, err: err, order: gen})
	}()
}

// onJudged takes the model's verdict; a failed or late one leaves the
// local score to decide alone.
func (c *Companion) onJudged(e event) {
	c.rep.busy = false
	if e.order != c.rep.gen {
		return // asked before a user restarted the conversation
	}
	if e.err != nil {
		reason := "judge_error"
		if errors.Is(e.err, context.DeadlineExceeded) {
			reason = "judge_timeout"
		}
		c.m.BrainFailures.WithLabelValues(reason).Inc()
		c.log.Warn("repetition judge: the model did not answer; the local score decides", "err", e.err)
		c.rep.ok = false
		return
	}
	c.rep.verdict, c.rep.ok = e.score, true
	c.log.Debug("repetition judge: the model's verdict", "score", e.score)
}

func (c *Companion) texts() []string {
	out := make([]string, 0, len(c.history))
	for _, m := range c.history {
		out = append(out, m.Params.Message)
	}
	return out
}
