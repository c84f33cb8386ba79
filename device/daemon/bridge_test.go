package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// Bridge clients that come and go leave nothing in the daemon: each
// identity's connection is the bridge's to close (before, every client
// added a closer the daemon kept until it stopped, with its connection).
func TestBridgeClientsLeaveNoCloser(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	port := bustest.FreePort(t)
	d, stop, _ := start(t, load(t, fmt.Sprintf(`version: 1
device: {id: bot}
room: {name: lab, members: [bot], floor: true}
mqtt: {broker: "%s"}
companion: {id: bot, name: Bot, sample_lines: ["Hi."], language: en}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "127.0.0.1:%d", websocket: {enabled: true, anonymous: "user:guest"}}
`, br.URL(), port)))
	defer stop()
	closers := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.closers)
	}
	before := closers()
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	for range 10 {
		c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", port), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil { // the hello: its identity is connected
			t.Fatal(err)
		}
		c.Close(websocket.StatusNormalClosure, "bye")
	}
	if after := closers(); after != before {
		t.Fatalf("the daemon holds %d closers after 10 bridge clients came and went, %d before", after, before)
	}
}
