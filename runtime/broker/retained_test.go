package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/chorus-robotics/chorus/runtime/broker"
)

// A subscription's scan of the retained messages and another client's
// retained publish at the same time. mochi v2.7.9 read a particle's
// retained path in the scan without the lock its writer holds, which -race
// reported (the embedded broker in the building bench); the module's
// patched copy (runtime/broker/third_party/mochi) reads it under that lock.
// Without the patch this test fails under -race.
func TestRetainedPublishBesideAWildcardSubscribe(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Config{Addr: "127.0.0.1:0", AllowAnonymous: true, OpenACL: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pub, err := connect(t, b.URL(), "ann", "")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := connect(t, b.URL(), "bob", "")
	if err != nil {
		t.Fatal(err)
	}
	const topics = 20
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// A payload sets the retained path, an empty one clears it.
			payload := []byte("x")
			if i%2 == 1 {
				payload = nil
			}
			pub.c.Publish(fmt.Sprintf("chorus/lab/retained/%d", i%topics), 1, true, payload).WaitTimeout(5 * time.Second)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for n := 0; n < 40 || time.Now().Before(deadline); n++ {
		if tok := sub.c.Subscribe("chorus/lab/retained/+", 0, func(paho.Client, paho.Message) {}); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe %d: %v", n, tok.Error())
		}
		if tok := sub.c.Unsubscribe("chorus/lab/retained/+"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("unsubscribe %d: %v", n, tok.Error())
		}
	}
	close(stop)
	wg.Wait()
}
