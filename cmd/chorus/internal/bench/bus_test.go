package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

func report(b *testing.B, ds []time.Duration, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	s := Summarize(ds)
	b.ReportMetric(float64(s.P50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(s.P99.Microseconds()), "p99-µs")
}

// BenchmarkBusRoundTrip compares runtime/bus with raw paho on the same
// broker, QoS 0 and 1, embedded and Mosquitto.
func BenchmarkBusRoundTrip(b *testing.B) {
	for _, broker := range []string{"embedded", "mosquitto"} {
		for _, qos := range []byte{0, 1} {
			for _, kind := range []string{"bus", "raw"} {
				b.Run(fmt.Sprintf("%s/qos%d/%s", broker, qos, kind), func(b *testing.B) {
					url := startBroker(b, broker)
					var ds []time.Duration
					var err error
					b.ResetTimer()
					if kind == "bus" {
						ds, err = BusRoundTrip(context.Background(), url, qos, b.N)
					} else {
						ds, err = RawRoundTrip(context.Background(), url, qos, b.N)
					}
					report(b, ds, err)
				})
			}
		}
	}
}

// BenchmarkFloor times a message's publish to its grant at every one of N
// companions (instant brain).
func BenchmarkFloor(b *testing.B) {
	for _, broker := range []string{"embedded", "mosquitto"} {
		for _, n := range []int{2, 5, 10, 50} {
			b.Run(fmt.Sprintf("%s/n=%d", broker, n), func(b *testing.B) {
				url := startBroker(b, broker)
				b.ResetTimer()
				ds, err := FloorLatency(context.Background(), url, n, b.N)
				report(b, ds, err)
			})
		}
	}
}

func startBroker(b *testing.B, kind string) string {
	if kind == "embedded" {
		return bustest.StartEmbedded(b, bustest.Options{ACL: true, Rosters: Rosters()}).URL()
	}
	return bustest.StartMosquitto(b, bustest.Options{ACL: true, Rosters: Rosters()}).URL()
}

// TestFloorLatencySmoke keeps the benchmark code itself working in CI.
func TestFloorLatencySmoke(t *testing.T) {
	url := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: Rosters()}).URL()
	ds, err := FloorLatency(context.Background(), url, 3, 5)
	if err != nil || len(ds) != 5 {
		t.Fatalf("%d rounds, %v", len(ds), err)
	}
	rt, err := BusRoundTrip(context.Background(), url, 1, 5)
	if err != nil || len(rt) != 5 {
		t.Fatalf("%d round trips, %v", len(rt), err)
	}
}

// BenchmarkTurnGap: one model call per turn (the draft) against two, with a
// model server that takes 300 ms per call.
func BenchmarkTurnGap(b *testing.B) {
	for _, draft := range []bool{true, false} {
		name := "one-call"
		if !draft {
			name = "two-call"
		}
		b.Run(name, func(b *testing.B) {
			ds, err := TurnGap(context.Background(), 300*time.Millisecond, draft, b.N)
			report(b, ds, err)
		})
	}
}

func TestTurnGapSmoke(t *testing.T) {
	one, err := TurnGap(context.Background(), 50*time.Millisecond, true, 2)
	if err != nil {
		t.Fatal(err)
	}
	two, err := TurnGap(context.Background(), 50*time.Millisecond, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	if Summarize(one).P50 >= Summarize(two).P50 {
		t.Fatalf("one-call %v is not faster than two-call %v", Summarize(one).P50, Summarize(two).P50)
	}
}
