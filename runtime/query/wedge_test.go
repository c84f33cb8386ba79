package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A burst of malformed queries from anyone allowed to ask must not wedge
// the device: the error replies go through a bounded worker, never from
// inside the bus handler (issue 9, defect 3). Before, each reply waited for
// its PUBACK on paho's delivery goroutine, which was also the one that had
// to read that PUBACK; every later query timed out.
func TestMalformedQueryBurstDoesNotWedgeTheDevice(t *testing.T) {
	bustest.ForEach(t, bustest.Options{ACL: true, Rosters: askers}, func(t *testing.T, br bustest.Broker) {
		dial := func(id string) *bus.MQTT {
			b, err := bus.Dial(context.Background(), bus.Options{Broker: br.URL(), ClientID: id + t.Name(), Username: id})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
		s := topic.New("")
		serve(t, dial("pi5"), "pi5", map[string]Handler{
			"vision": func(context.Context, string, json.RawMessage) (any, error) {
				return map[string]any{"image": "x"}, nil
			},
		})
		c := NewClient(dial("kyoko"), s, "kyoko", ClientOptions{Timeout: 5 * time.Second})
		if _, err := askUntilServed(c, "pi5", "vision"); err != nil {
			t.Fatal(err)
		}
		attacker := dial("mallory")
		for i := range 1000 {
			q := fmt.Sprintf(`{"jsonrpc":"2.0","method":"query.send","id":"bad-%d","params":{"from":"mallory","type":""}}`, i)
			if err := attacker.Publish(context.Background(), s.Queries("pi5"), []byte(q), false); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := c.Ask(context.Background(), "pi5", "vision", nil, 5*time.Second); err != nil {
			t.Fatalf("vision after 1,000 malformed queries: %v", err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("vision answered in %v after 1,000 malformed queries, want < 100 ms", d)
		}
	})
}

// askUntilServed retries while the server's subscription settles.
func askUntilServed(c *Client, device, typ string) (json.RawMessage, error) {
	var err error
	for range 20 {
		var res json.RawMessage
		if res, err = c.Ask(context.Background(), device, typ, nil, 250*time.Millisecond); err == nil {
			return res, nil
		}
	}
	return nil, err
}

// A query larger than the cap (a 5 MB speak from a model that wrote too
// much) is answered with an error result naming the cap whenever its id can
// be read, so the asker does not wait out its timeout (issue 15, defect 2).
func TestOversizeQueryIsAnsweredWithAnError(t *testing.T) {
	mem := bustest.NewMemory(t)
	serve(t, mem.Conn(nil, nil), "pi5", map[string]Handler{"speak": echo})
	mem.Settle()
	c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{})
	start := time.Now()
	_, err := c.Ask(context.Background(), "pi5", "speak", map[string]string{"message": strings.Repeat("words ", 1<<20)}, 10*time.Second)
	var re *RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "cap is") {
		t.Fatalf("err = %v, want an error result naming the cap", err)
	}
	// Well inside the 10 s timeout: the asker did not wait it out (a 6 MB
	// payload under the race detector on a loaded 2-core machine took
	// 3.6 s once).
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v, the asker waited out most of its timeout", d)
	}
}
