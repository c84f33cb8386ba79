package metrics

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestRejectCountsEveryTimeLogsOnce(t *testing.T) {
	m := New()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for range 5 {
		m.Reject(log, "state", "kyoko", "syntax", errors.New("bad"))
	}
	m.Reject(log, "state", "hana", "syntax", errors.New("bad"))
	if got := Value(m.BadInput.WithLabelValues("state", "syntax")); got != 6 {
		t.Fatalf("counted %v rejects, want 6", got)
	}
	if n := strings.Count(buf.String(), "rejected input"); n != 2 {
		t.Fatalf("logged %d lines, want 2 (one per peer):\n%s", n, buf.String())
	}
}

func TestLimiterBounded(t *testing.T) {
	l := limiter{every: time.Minute}
	now := time.Now()
	for i := range maxLimiterKeys + 100 {
		l.allow(string(rune(i)), now)
	}
	if len(l.last) > maxLimiterKeys {
		t.Fatalf("limiter grew to %d keys, cap %d", len(l.last), maxLimiterKeys)
	}
	if !l.allow("late-key", now.Add(2*time.Minute)) {
		t.Fatal("after the period a new key must be let through")
	}
}

func TestExposition(t *testing.T) {
	m := New()
	m.Build.WithLabelValues("v1", "go1.26").Set(1)
	m.Votes.Inc()
	m.Hearing.WithLabelValues("reported").Add(2)
	m.Hearing.WithLabelValues("reported").Add(-5) // a counter only grows
	m.BadInput.WithLabelValues("state", "a \"quoted\"\nkind\\").Inc()
	m.TurnLatency.Observe(0.015)
	m.Held.WithLabelValues("floor_ballots").Set(3)
	var buf bytes.Buffer
	if err := m.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# HELP chorus_floor_votes_total States counted by the floor.\n# TYPE chorus_floor_votes_total counter\nchorus_floor_votes_total 1\n",
		`chorus_build_info{goversion="go1.26",version="v1"} 1` + "\n", // labels in name order, as Prometheus's clients write them
		`chorus_hearing_total{event="reported"} 2` + "\n",
		`chorus_bad_input_total{kind="a \"quoted\"\nkind\\",source="state"} 1` + "\n",
		`chorus_bad_input_total{kind="syntax",source="state"} 0` + "\n", // the zero series exported at start
		`chorus_floor_turn_latency_seconds_bucket{le="0.02"} 1` + "\n",
		`chorus_floor_turn_latency_seconds_bucket{le="0.01"} 0` + "\n",
		"chorus_floor_turn_latency_seconds_count 1\n",
		"# TYPE chorus_floor_turn_latency_seconds histogram\n",
		`chorus_held_entries{what="floor_ballots"} 3` + "\n",
		"go_goroutines ",
		"process_resident_memory_bytes ",
		"process_open_fds ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
	if got := Value(m.Hearing.WithLabelValues("reported")); got != 2 {
		t.Errorf("Value = %v, want 2", got)
	}
}

func TestWrongLabelCountIsTheCallersBug(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a series named by the wrong number of label values must panic, as Prometheus's client does")
		}
	}()
	New().BadInput.WithLabelValues("state")
}

// TestPrometheusParsesTheExposition reads /metrics as Prometheus does, with
// its own text parser: every family typed, its help text, its series.
func TestPrometheusParsesTheExposition(t *testing.T) {
	m := New()
	m.Build.WithLabelValues("v1", "go1.26").Set(1)
	m.BadInput.WithLabelValues("state", "odd \"kind\"\n\\").Inc()
	m.BadInput.WithLabelValues("state", "not utf-8 \xff\xfe").Inc()
	m.ActionDuration.WithLabelValues("wave").Observe(0.3)
	m.QueryLatency.WithLabelValues("speak").Observe(0.01)
	var buf bytes.Buffer
	if err := m.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("Prometheus cannot parse the exposition: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"chorus_build_info":            dto.MetricType_GAUGE,
		"chorus_bad_input_total":       dto.MetricType_COUNTER,
		"chorus_action_seconds":        dto.MetricType_HISTOGRAM,
		"chorus_query_latency_seconds": dto.MetricType_HISTOGRAM,
		"go_goroutines":                dto.MetricType_GAUGE,
	} {
		f := fams[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
		if strings.HasPrefix(name, "chorus_") && f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	found := false
	for _, s := range fams["chorus_bad_input_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "kind" && l.GetValue() == "odd \"kind\"\n\\" {
				found = s.GetCounter().GetValue() == 1
			}
		}
	}
	if !found {
		t.Error("the escaped label value did not come back as written")
	}
	// Two lists of values that join alike are two series.
	m.BadInput.WithLabelValues("a\xff", "b").Inc()
	if got := Value(m.BadInput.WithLabelValues("a", "\xffb")); got != 0 {
		t.Errorf("(a\\xff, b) and (a, \\xffb) are one series: %v", got)
	}
	if h := fams["chorus_action_seconds"].GetMetric(); len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("chorus_action_seconds = %v, want one series of one observation", h)
	}
}

// BenchmarkCountWithLabels is the cost of counting one event of a labelled
// series (the hot use: the floor's and the companion's counters).
func BenchmarkCountWithLabels(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.BadInput.WithLabelValues("state", "syntax").Inc()
	}
}

// Series named from many goroutines at once are one series each, counted
// exactly, while /metrics is written.
func TestSeriesFromManyGoroutines(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				m.Hearing.WithLabelValues([]string{"a", "b", "c"}[i%3]).Inc()
				m.Held.WithLabelValues("g" + string(rune('0'+g))).Set(float64(i))
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			m.WritePrometheus(io.Discard)
		}
	})
	wg.Wait()
	total := Value(m.Hearing.WithLabelValues("a")) + Value(m.Hearing.WithLabelValues("b")) + Value(m.Hearing.WithLabelValues("c"))
	if total != 8000 {
		t.Fatalf("counted %v, want 8000", total)
	}
	if got := Value(m.Held.WithLabelValues("g3")); got != 999 {
		t.Fatalf("gauge %v, want its last value 999", got)
	}
}
