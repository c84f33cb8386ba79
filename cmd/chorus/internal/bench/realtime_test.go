package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// BenchmarkRealtime measures a realtime post → its broadcast at all 13
// players (issue 12), at 40 and 400 posts a second, with and without a
// client that never reads, on both brokers: go test -run XXX -bench
// Realtime -benchtime 1x ./cmd/chorus/internal/bench/ (also `chorus bench
// realtime`).
func BenchmarkRealtime(b *testing.B) {
	for _, kind := range []string{"embedded", "mosquitto"} {
		b.Run(kind, func(b *testing.B) {
			o := bustest.Options{ACL: true, Scheme: Scheme()}
			var url string
			if kind == "mosquitto" {
				url = bustest.StartMosquitto(b, o).URL()
			} else {
				url = bustest.StartEmbedded(b, o).URL()
			}
			raw, err := RawRoundTrip(context.Background(), url, 1, 1000)
			if err != nil {
				b.Fatal(err)
			}
			st := Summarize(raw)
			b.Logf("%s raw qos1 round trip: %v", kind, st)
			for _, rate := range []float64{40, 400} {
				b.Run(fmt.Sprintf("%g-per-s/raw-fanout", rate), func(b *testing.B) {
					for range b.N {
						ds, err := RawFanout(context.Background(), url, RealtimePlayers, rate, int(rate)*5)
						if err != nil {
							b.Fatal(err)
						}
						st := Summarize(ds)
						b.ReportMetric(float64(st.P50.Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(st.P99.Microseconds())/1000, "p99-ms")
						b.ReportMetric(float64(st.Max.Microseconds())/1000, "max-ms")
					}
				})
				for _, slow := range []bool{false, true} {
					b.Run(fmt.Sprintf("%g-per-s/slow-reader=%v", rate, slow), func(b *testing.B) {
						for range b.N {
							res, err := Realtime(context.Background(), RealtimeCase{URL: url, Rate: rate, Posts: int(rate) * 5, SlowReader: slow})
							if err != nil {
								b.Fatal(err)
							}
							st := Summarize(res.Latencies)
							b.ReportMetric(float64(st.P50.Microseconds())/1000, "p50-ms")
							b.ReportMetric(float64(st.P99.Microseconds())/1000, "p99-ms")
							b.ReportMetric(float64(st.Max.Microseconds())/1000, "max-ms")
							b.ReportMetric(float64(res.TimerLate.Microseconds())/1000, "timer-late-ms")
						}
					})
				}
			}
		})
	}
}

// A short realtime run on each broker, with the client that never reads:
// every post is accepted and reaches all 13 players, and the silence
// timer fires within 50 ms of its time.
func TestRealtimeSmoke(t *testing.T) {
	bustest.ForEach(t, bustest.Options{ACL: true, Scheme: Scheme()}, func(t *testing.T, br bustest.Broker) {
		res, err := Realtime(context.Background(), RealtimeCase{URL: br.URL(), Rate: 200, Posts: 200, SlowReader: true, Silence: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v (first player %v), timer late %v", Summarize(res.Latencies), Summarize(res.First), res.TimerLate)
		if len(res.Latencies) != 200 || res.Refused != 0 {
			t.Fatalf("%d posts timed, %d refused", len(res.Latencies), res.Refused)
		}
		if res.TimerLate < -5*time.Millisecond || res.TimerLate > 50*time.Millisecond {
			t.Fatalf("the silence timer fired %v off its time", res.TimerLate)
		}
	})
}
