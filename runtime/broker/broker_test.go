package broker

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Close never hangs while clients leave at the same moment. mochi's own
// listener close reads the clients under a read lock taken twice
// (mochi-mqtt/server issue #488): a writer (a client leaving deletes
// itself) queued between the two locks deadlocks it. The writer here
// takes the clients' write lock as often as it can while the broker
// closes.
func TestCloseWhileClientsLeave(t *testing.T) {
	for i := range 50 {
		b, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", AllowAnonymous: true})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					b.srv.Clients.Delete("a-client-leaving")
				}
			}
		}()
		closed := make(chan error, 1)
		go func() { closed <- b.Close() }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Close still running after 5 s (deadlocked)", i)
		}
		close(stop)
		wg.Wait()
	}
}
