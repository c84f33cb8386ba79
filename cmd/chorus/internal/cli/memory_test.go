package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/memory/control"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// chorus memory works with its own defaults: without -device it asks the
// robots online on the broker, a person's list without -person is their
// own, and forget -fact needs no -person (it failed on each before).
func TestMemoryWithItsDefaults(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dev := dialAs(t, ctx, br.URL(), "dev", "dev")
	st, err := memory.Open(t.TempDir(), "kyoko", memory.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Add(memory.Fact{Person: "user", Key: "home", Text: "lives in Osaka", MessageID: "m1"},
		memory.Fact{Person: "bob", Key: "home", Text: "lives in Kyoto", MessageID: "m2"}); err != nil {
		t.Fatal(err)
	}
	s := topic.New("")
	done := make(chan struct{})
	go func() { defer close(done); control.Serve(ctx, dev, s, "dev", &control.Memory{Store: st}) }()
	defer func() { cancel(); <-done }()
	retain(t, ctx, dev, s.Presence("lab", "kyoko"), protocol.Presence{Online: true, Device: "dev", Since: time.Now()})
	time.Sleep(100 * time.Millisecond) // the server's subscription

	code, out, errOut := run("memory", "list", "-broker", br.URL())
	if code != 0 || !strings.Contains(out, "dev\t") || !strings.Contains(out, "lives in Osaka") || strings.Contains(out, "Kyoto") {
		t.Fatalf("memory list with its defaults: %d %q %s", code, out, errOut)
	}
	id := strings.Split(out, "\t")[1]
	if code, out, errOut := run("memory", "forget", "-broker", br.URL(), "-fact", id); code != 0 || !strings.Contains(out, "forgot 1") {
		t.Fatalf("memory forget -fact: %d %q %s", code, out, errOut)
	}
	if len(st.Facts("user")) != 0 || len(st.Facts("bob")) != 1 {
		t.Fatalf("after forget: %v", st.Facts(""))
	}
}

// A named device whose companion is offline is named at once, not after
// the timeout (it waited all of -timeout before).
func TestMemoryOfAnOfflineDeviceFailsAtOnce(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dev := dialAs(t, ctx, br.URL(), "dev", "dev")
	s := topic.New("")
	retain(t, ctx, dev, s.Presence("lab", "kyoko"), protocol.Presence{Online: false, Device: "dev", Since: time.Now()})
	start := time.Now()
	code, _, errOut := run("memory", "list", "-broker", br.URL(), "-device", "dev", "-timeout", "20s")
	if took := time.Since(start); code == 0 || !strings.Contains(errOut, "offline") || took > 5*time.Second {
		t.Fatalf("memory list of an offline device: exit %d after %v: %s", code, took, errOut)
	}
}
