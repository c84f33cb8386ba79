package broker_test

import (
	"bytes"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// A topic's payload cap is what it carries: a memory answer lists a
// person's facts (as large as a query's result, not a room payload's
// 64 KB), a memory request an enrolment's embeddings (1 MiB); a room's
// words stay at 64 KB.
func TestPayloadCapsByTopic(t *testing.T) {
	s, b := annsRoom(t)
	url := "tcp://" + b.Addr()
	bob, err := connect(t, url, "bob", "pw-bob")
	if err != nil {
		t.Fatal(err)
	}
	ann, err := connect(t, url, "ann", "pw-ann")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	for _, c := range []*client{bob, ann} {
		c := c
		for _, f := range []string{s.MemoryAnswer("ann", "bob"), s.Memory("ann", "bob"), s.Message("lab", "ann")} {
			tok := c.c.Subscribe(f, 1, func(_ paho.Client, m paho.Message) { got <- m.Topic() })
			if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("subscribe %s: %v", f, tok.Error())
			}
		}
	}
	for _, tc := range []struct {
		by    *client
		topic string
		size  int
		want  bool
	}{
		{ann, s.MemoryAnswer("ann", "bob"), 200 << 10, true},
		{bob, s.Memory("ann", "bob"), 900 << 10, true},
		{ann, s.Message("lab", "ann"), 200 << 10, false},
	} {
		tok := tc.by.c.Publish(tc.topic, 1, false, bytes.Repeat([]byte("x"), tc.size))
		tok.WaitTimeout(5 * time.Second)
		delivered := false
		for end := time.After(time.Second); ; {
			select {
			case g := <-got:
				delivered = delivered || g == tc.topic
				continue
			case <-end:
			}
			break
		}
		if delivered != tc.want {
			t.Errorf("%d bytes on %s: delivered %v, want %v", tc.size, tc.topic, delivered, tc.want)
		}
	}
}
