package companion

import (
	"slices"
	"time"
)

// thinkTimes estimates how long a companion's brain takes to vote, from
// its last successful calls: the 90th percentile, plus a quarter of it and
// 250 ms for the network, never more than the brain's timeout. Until
// minSamples calls are measured the estimate is the configured guess.
type thinkTimes struct {
	last [16]time.Duration
	n    int // calls recorded (the ring holds the last 16)
}

const minSamples = 3

func (t *thinkTimes) add(d time.Duration) {
	t.last[t.n%len(t.last)] = d
	t.n++
}

func (t *thinkTimes) estimate(guess, timeout time.Duration) time.Duration {
	if t.n < minSamples {
		return guess
	}
	xs := slices.Clone(t.last[:min(t.n, len(t.last))])
	slices.Sort(xs)
	p90 := xs[(len(xs)*9+9)/10-1]
	return min(p90+p90/4+250*time.Millisecond, timeout)
}

// moved reports whether an estimate differs enough from what was announced
// to announce it again: by more than a quarter, and by more than 250 ms.
func moved(announced, estimate time.Duration) bool {
	d := estimate - announced
	if d < 0 {
		d = -d
	}
	return d > announced/4 && d > 250*time.Millisecond
}

// announce tells the room a new expected think time when the measured one
// has moved enough since the last announcement.
func (c *Companion) announce(took time.Duration) {
	p := c.cfg.Presence
	if p == nil || took <= 0 {
		return
	}
	c.took.add(took)
	est := c.took.estimate(c.cfg.ExpectThink, c.cfg.ThinkTimeout)
	now := c.cfg.Clock.Now()
	if !moved(p.Think(), est) || now.Sub(c.told) < 5*time.Second {
		return
	}
	c.told = now
	c.log.Info("announcing a new think time", "think", est.Round(time.Millisecond), "was", p.Think().Round(time.Millisecond))
	if err := p.SetThink(est, c.out); err != nil {
		c.log.Warn("think time not announced", "err", err)
	}
}
