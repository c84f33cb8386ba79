package act

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// slowPart is a part that takes a while to let go when its action is
// cancelled (a program given time to exit, a pulse finishing its edge, a
// strip finishing a frame): the case where an older action still runs
// when a newer one could start. It counts how many of its actions run at
// once.
type slowPart struct {
	linger    time.Duration // how long it runs on after its ctx ends
	running   atomic.Int32
	most      atomic.Int32
	cancelled chan string // the args of each action as its ctx ends

	mu        sync.Mutex
	started   []string
	completed []string
}

func (p *slowPart) do(ctx context.Context, args json.RawMessage) (string, error) {
	n := p.running.Add(1)
	defer p.running.Add(-1)
	for {
		m := p.most.Load()
		if n <= m || p.most.CompareAndSwap(m, n) {
			break
		}
	}
	var a struct {
		Angle float64 `json:"angle"`
	}
	json.Unmarshal(args, &a)
	p.mu.Lock()
	p.started = append(p.started, string(args))
	p.mu.Unlock()
	hold := time.Hour // the first two hold the part until replaced
	if a.Angle == 3 {
		hold = 20 * time.Millisecond
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-t.C:
		p.mu.Lock()
		p.completed = append(p.completed, string(args))
		p.mu.Unlock()
		return "moved " + string(args), nil
	case <-ctx.Done():
		p.cancelled <- string(args)
		time.Sleep(p.linger) // still on the part
		return "", ctx.Err()
	}
}

// Three quick requests for one part whose actions are slow to let go:
// never two of them run at once on it, the last is the one that
// completes, and the earlier two are answered replaced. (The older code
// let the third start while the first still ran: the second, replaced
// while it waited, stopped waiting for the first.)
func TestThreeQuickActionsOnASlowPartNeverOverlap(t *testing.T) {
	p := &slowPart{linger: 300 * time.Millisecond, cancelled: make(chan string, 3)}
	b, _ := newBody(t, Action{Def: protocol.ActionDef{Name: "pulse", Description: "a slow part", Schema: angleSchema}, Part: "pin", Do: p.do})
	type answer struct {
		res protocol.ActionResult
		err error
	}
	ask := func(angle string) chan answer {
		c := make(chan answer, 1)
		go func() {
			res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "pulse", Args: json.RawMessage(`{"angle":` + angle + `}`)})
			c <- answer{res, err}
		}()
		return c
	}
	first := ask("1")
	waitFor(t, func() bool { return p.running.Load() == 1 })
	second := ask("2")
	select { // the second has replaced the first, which now lingers
	case got := <-p.cancelled:
		if got != `{"angle":1}` {
			t.Fatalf("%s was cancelled, want the first", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second request did not cancel the first")
	}
	third := ask("3")

	var answers [3]answer
	for i, c := range []chan answer{first, second, third} {
		select {
		case answers[i] = <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d not answered", i+1)
		}
	}
	if most := p.most.Load(); most != 1 {
		t.Errorf("%d actions ran at once on one part", most)
	}
	for i, a := range answers[:2] {
		if a.err != nil || !a.res.Replaced || a.res.Done {
			t.Errorf("request %d: %+v, %v; want replaced", i+1, a.res, a.err)
		}
	}
	if a := answers[2]; a.err != nil || !a.res.Done || a.res.Replaced {
		t.Errorf("the last request: %+v, %v; want done", a.res, a.err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.completed) != 1 || p.completed[0] != `{"angle":3}` {
		t.Errorf("completed %v, want only the last", p.completed)
	}
	if n := len(p.started); n < 2 || p.started[0] != `{"angle":1}` || p.started[n-1] != `{"angle":3}` {
		t.Errorf("started %v", p.started)
	}
}
