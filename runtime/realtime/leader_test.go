package realtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// runLeader dials broker url as user and runs a realtime Leader there with
// short claim checks; it returns the leader, its metrics and its log.
func runLeader(t *testing.T, url, user, instance string) (*realtime.Leader, *metrics.Metrics, *logtest.Buffer) {
	t.Helper()
	s := topic.New("").WithRoster("lr", members)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: user + "-" + protocol.NewID()[:8], Username: user,
		MaxReconnect: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("dial %s as %s: %v", url, user, err)
	}
	logs := &logtest.Buffer{}
	m := metrics.New()
	r := room.New(b, s, "lr", slog.New(slog.NewTextHandler(logs, nil)), m)
	r.SetMembers(members)
	l := &realtime.Leader{Room: r, Instance: instance, ID: user, JoinWait: 100 * time.Millisecond,
		ClaimCheck: 300 * time.Millisecond, Retry: 400 * time.Millisecond}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(rctx) }()
	t.Cleanup(func() { rcancel(); <-done; b.Close() })
	return l, m, logs
}

// A realtime floor behind an ACL that refuses it floor/leader says so
// loudly, counts it, leads nothing and keeps trying (issue 20, item 3);
// the same floor under an identity the ACL allows leads. Against the
// embedded broker and Mosquitto, with the ACL Chorus renders: "box" is no
// floor identity, so the broker drops its claim. (No Last Will here: the
// embedded broker refuses a connection whose will the ACL refuses.)
func TestRealtimeLeaderBehindAnACLThatRefusesTheClaim(t *testing.T) {
	bustest.ForEach(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lr": members}}, func(t *testing.T, br bustest.Broker) {
		refused, m, logs := runLeader(t, br.URL(), "box", "box-a")
		deadline := time.Now().Add(10 * time.Second)
		for metrics.Value(m.ClaimFailures) < 2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := metrics.Value(m.ClaimFailures); n < 2 {
			t.Fatalf("claim failures = %v, want the leader to say so and try again\n%s", n, logs)
		}
		if !strings.Contains(logs.String(), "CANNOT CLAIM THE ROOM") {
			t.Fatalf("the leader did not say loudly that it cannot claim the room:\n%s", logs)
		}
		if refused.Active() {
			t.Fatal("a leader whose claim never came back leads the room")
		}

		allowed, m2, logs2 := runLeader(t, br.URL(), topic.DefaultFloorID, "box-b")
		deadline = time.Now().Add(10 * time.Second)
		for !allowed.Active() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !allowed.Active() {
			t.Fatalf("a floor identity the ACL allows did not lead\n%s", logs2)
		}
		if n := metrics.Value(m2.ClaimFailures); n != 0 {
			t.Fatalf("claim failures = %v for a claim the broker took", n)
		}
		if refused.Active() {
			t.Fatal("the refused leader leads beside the allowed one")
		}
	})
}
