package system

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The soak (issue 10): a 5-companion room of chorusd processes on
// Mosquitto with the shipped settings, an instant brain, and a user who
// starts a new conversation whenever the room rests, paced to 20 messages
// a second. It samples every process's RSS, goroutines and held entries
// (chorus_held_entries) and checks, after warm-up: RSS grows less than
// 5 %, goroutines stay flat, and once the room rests at the end no work
// in progress is held anywhere.
//
// CHORUS_SOAK=30m sets its length (`make soak`); without it the test runs
// a 45-second version in CI.
func TestSoak(t *testing.T) {
	length := 45 * time.Second
	if v := os.Getenv("CHORUS_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CHORUS_SOAK=%q: %v", v, err)
		}
		length = d
	}
	const rate = 20.0 // messages a second, the user's and the companions'
	warmup := max(15*time.Second, length/6)
	// The leak bound is the 5 % for a real soak. A 30-second window
	// after warm-up measures where the Go heap goal happens to sit between
	// two collections (±9 % seen on a loaded CI machine), not a leak, so the
	// CI version allows 15 % and leans on goroutines and held entries.
	maxGrowth := 0.05
	if length < 10*time.Minute {
		maxGrowth = 0.15
	}
	every := max(time.Second, length/180)

	o := newOutside(t, bustest.Options{Rosters: fiveRoster})
	w := o.watch("chorus/rooms/lab/presence/+", "chorus/rooms/lab/floor/leader")
	procs := o.room(w)
	c := o.count(t)
	user := o.pubLines("user", "chorus/rooms/lab/messages/user")
	time.Sleep(500 * time.Millisecond)

	var samples []soakSample
	ids := append([]string{"floor"}, o.members...)
	sample := func() soakSample {
		s := soakSample{at: time.Now(), rss: map[string]float64{}, goroutines: map[string]float64{}, held: map[string]map[string]float64{}}
		for _, id := range ids {
			port := "floor-box"
			if id != "floor" {
				port = id
			}
			s.rss[id] = rssMiB(t, procs[id].cmd.Process.Pid)
			text := o.metricsText(port)
			s.goroutines[id] = sampleOf(text, "go_goroutines")
			s.held[id] = heldOf(text)
		}
		return s
	}

	start := time.Now()
	next := start
	conversations, stalls := 0, 0
	tick := time.NewTicker(every)
	defer tick.Stop()
	for time.Since(start) < length {
		// Pace: the room is ahead of 20 messages a second, wait.
		if ahead := time.Duration(float64(c.messages()) / rate * float64(time.Second)); time.Since(start) < ahead {
			time.Sleep(ahead - time.Since(start))
		}
		id := protocol.NewID()
		user.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"message.send","params":{"id":%q,"from":"user","to":[],"message":"Conversation %d: what do you all think?"}}`, id, conversations))
		conversations++
		if !c.waitRest(id, 15*time.Second) {
			stalls++
			t.Errorf("conversation %d did not come to rest within 15 s", conversations)
		}
		for time.Now().After(next) {
			samples = append(samples, sample())
			next = next.Add(every)
		}
	}
	ran := time.Since(start)
	time.Sleep(time.Second) // the last rest reaches everyone
	// At rest, a goroutine may be alive for a moment (a timer's function,
	// a closing connection's reader): a leak stays in every sample, so the
	// fewest of three samples is the count at rest.
	final := sample()
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		again := sample()
		for id, n := range again.goroutines {
			final.goroutines[id] = min(final.goroutines[id], n)
		}
	}

	// The figures.
	msgs := c.messages()
	t.Logf("soak: %v, %d conversations, %d messages (%.1f a second, target %.0f), %d grants, %d stalls, %d samples every %v, warm-up %v",
		ran.Round(time.Second), conversations, msgs, float64(msgs)/ran.Seconds(), rate, c.grants(), stalls, len(samples), every, warmup)
	if got := float64(msgs) / ran.Seconds(); got < 0.9*rate {
		t.Errorf("the room ran at %.1f messages a second, want %.0f", got, rate)
	}
	if n := c.conflicts(); n > 0 {
		t.Errorf("%d messages were granted to two speakers", n)
	}
	var after []soakSample
	for _, s := range samples {
		if s.at.Sub(start) >= warmup {
			after = append(after, s)
		}
	}
	if len(after) < 6 {
		t.Fatalf("only %d samples after warm-up", len(after))
	}
	fifth := max(1, len(after)/5)
	for _, id := range ids {
		var rss, gor []float64
		for _, s := range after {
			rss = append(rss, s.rss[id])
			gor = append(gor, s.goroutines[id])
		}
		first, last := median(rss[:fifth]), median(rss[len(rss)-fifth:])
		growth := (last - first) / first
		lo, hi := minmax(gor)
		t.Logf("%-6s RSS %.1f → %.1f MiB (%+.1f %%, max %.1f); goroutines %.0f–%.0f, %.0f at rest; held at rest: %s",
			id, first, last, 100*growth, maxOf(rss), lo, hi, final.goroutines[id], summary(final.held[id]))
		if growth >= maxGrowth {
			t.Errorf("%s: RSS grew %.1f %% after warm-up, want < %.0f %%", id, 100*growth, 100*maxGrowth)
		}
		if hi-lo > 8 || final.goroutines[id] > hi {
			t.Errorf("%s: goroutines %.0f–%.0f after warm-up, %.0f at rest: not flat", id, lo, hi, final.goroutines[id])
		}
		for what, v := range final.held[id] {
			if drains(what) && v != 0 {
				t.Errorf("%s holds %v %s with the room at rest", id, v, what)
			}
			if limit, ok := heldCaps[what]; ok && v > limit {
				t.Errorf("%s holds %v %s, its cap is %v", id, v, what, limit)
			}
		}
	}
	if len(final.held["floor"]) == 0 || len(final.held["ann"]) == 0 {
		t.Errorf("no held entries on /metrics: floor %v, ann %v", final.held["floor"], final.held["ann"])
	}
}

type soakSample struct {
	at         time.Time
	rss        map[string]float64
	goroutines map[string]float64
	held       map[string]map[string]float64
}

// heldCaps are the bounded books and their caps.
var heldCaps = map[string]float64{
	"floor_decided_ids": 256, "companion_thoughts": 32, "companion_answered": 32, "companion_heard_ids": 512, "query_recent_ids": 256,
}

// drains reports whether what is work in progress, 0 when the room rests.
func drains(what string) bool {
	switch what {
	case "floor_ballots", "floor_early_states", "floor_orphans", "floor_unannounced", "floor_awaiting_answer", "floor_events_queued",
		"companion_thinking", "companion_events_queued", "query_running", "query_pending":
		return true
	}
	return false
}

func rssMiB(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("RSS of %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

var heldLine = regexp.MustCompile(`(?m)^chorus_held_entries\{what="([a-z_]+)"\} ([0-9.e+-]+)$`)

func heldOf(text string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range heldLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out
}

func sampleOf(text, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+-]+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func minmax(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func maxOf(v []float64) float64 { _, hi := minmax(v); return hi }

// counter is a mosquitto_sub on the room's messages and grants that keeps
// counts, not lines (a soak publishes hundreds of thousands).
type counter struct {
	mu       sync.Mutex
	nMsgs    int
	nGrants  int
	rests    map[string]bool   // message ids the room rested after
	speakers map[string]string // message id -> speaker, the newest 1,000
	order    []string
	conflict int
	changed  chan struct{}
}

// count starts the counter as the watcher.
func (o *outside) count(t *testing.T) *counter {
	c := &counter{rests: map[string]bool{}, speakers: map[string]string{}, changed: make(chan struct{})}
	cmd := exec.Command("mosquitto_sub", "-h", "127.0.0.1", "-p", strconv.Itoa(o.mq.Port()), "-u", "watcher", "-P", password("watcher"),
		"-v", "-q", "1", "-t", "chorus/rooms/lab/messages/+", "-t", "chorus/rooms/lab/turns")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mosquitto_sub: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			topic, payload, _ := bytes.Cut(sc.Bytes(), []byte(" "))
			c.line(string(topic), payload)
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); <-done })
	time.Sleep(200 * time.Millisecond)
	return c
}

func (c *counter) line(topic string, payload []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasPrefix(topic, "chorus/rooms/lab/messages/") {
		c.nMsgs++
		return
	}
	g, err := protocol.DecodeTurnGrant(payload, 0)
	if err != nil {
		return
	}
	if prev, ok := c.speakers[g.MessageID]; ok {
		if prev != g.SpeakerID() {
			c.conflict++
		}
		return // a repeated grant
	}
	c.nGrants++
	c.speakers[g.MessageID] = g.SpeakerID()
	c.order = append(c.order, g.MessageID)
	if len(c.order) > 1000 {
		delete(c.speakers, c.order[0])
		delete(c.rests, c.order[0])
		c.order = c.order[1:]
	}
	if g.Speaker == nil {
		c.rests[g.MessageID] = true
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *counter) messages() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.nMsgs }
func (c *counter) grants() int    { c.mu.Lock(); defer c.mu.Unlock(); return c.nGrants }
func (c *counter) conflicts() int { c.mu.Lock(); defer c.mu.Unlock(); return c.conflict }

// waitRest waits until the room rests after the conversation user
// message id started: a rest on any message seen after it.
func (c *counter) waitRest(id string, within time.Duration) bool {
	deadline := time.After(within)
	for {
		c.mu.Lock()
		started, rested := false, false
		for _, m := range c.order {
			if m == id {
				started = true
			}
			if started && c.rests[m] {
				rested = true
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if rested {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
