package bus_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, but
// for one of paho's own: a SUBSCRIBE that paho's reconnect handler sends
// just as the connection closes waits in paho's Subscribe for its
// outbound queue until paho's write timeout (30 s), since paho's comms
// goroutines that would read it have stopped (paho 1.5.1, client.go's
// select on oboundP). It holds nothing of ours and ends by itself; seen
// once in a CI run on a loaded machine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/eclipse/paho%2emqtt%2egolang.(*client).Subscribe"))
}
