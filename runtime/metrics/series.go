package metrics

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"sync"

	vm "github.com/VictoriaMetrics/metrics"
)

func init() {
	// # HELP and # TYPE lines: the help text is filled in by WritePrometheus.
	vm.ExposeMetadata(true)
}

// Counter is a counter without labels, or one series of a CounterVec.
type Counter struct{ c *vm.Counter }

// Inc adds 1.
func (c *Counter) Inc() { c.c.Inc() }

// Add adds v, which must be a whole number of events; a negative v is
// ignored (a counter only grows).
func (c *Counter) Add(v float64) {
	if v > 0 {
		c.c.AddInt64(int64(v))
	}
}

func (c *Counter) value() float64 { return float64(c.c.Get()) }

// Gauge is a gauge without labels, or one series of a GaugeVec.
type Gauge struct{ g *vm.Gauge }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.g.Set(v) }

// Add adds v (which may be negative).
func (g *Gauge) Add(v float64) { g.g.Add(v) }

// Inc adds 1.
func (g *Gauge) Inc() { g.g.Inc() }

// Dec subtracts 1.
func (g *Gauge) Dec() { g.g.Dec() }

func (g *Gauge) value() float64 { return g.g.Get() }

// Histogram is a Prometheus histogram without labels, or one series of a
// HistogramVec.
type Histogram struct{ h *vm.PrometheusHistogram }

// Observe counts one observation of v.
func (h *Histogram) Observe(v float64) { h.h.Update(v) }

// Value reads a counter or gauge: for tests.
func Value(m interface{ value() float64 }) float64 { return m.value() }

// vec names the series of one metric by its label values.
type vec[T any] struct {
	name   string
	labels []string
	order  []int // label indexes, in name order: Prometheus's own clients write them so
	series func(name string) T

	mu   sync.RWMutex
	made map[string]T // by the label values, each after its length
}

func newVec[T any](name string, labels []string, series func(string) T) vec[T] {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return vec[T]{name: name, labels: labels, order: order, series: series, made: make(map[string]T)}
}

// labelValue escapes a label's value as Prometheus's text format does.
var labelValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// with returns the series of values, one per label, created on first use.
// A wrong number of values is a bug of the caller's, as with Prometheus's
// client: it panics.
func (v *vec[T]) with(values []string) T {
	if len(values) != len(v.labels) {
		panic("metrics: " + v.name + " takes " + strings.Join(v.labels, ", "))
	}
	var buf [128]byte
	key := buf[:0]
	for _, s := range values { // each value's length first: no two lists of values share a key
		key = binary.AppendUvarint(key, uint64(len(s)))
		key = append(key, s...)
	}
	v.mu.RLock()
	t, ok := v.made[string(key)]
	v.mu.RUnlock()
	if ok {
		return t
	}
	var b strings.Builder
	b.WriteString(v.name)
	b.WriteByte('{')
	for n, i := range v.order {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(v.labels[i])
		b.WriteString(`="`)
		labelValue.WriteString(&b, strings.ToValidUTF8(values[i], "\uFFFD")) // Prometheus refuses a page with invalid UTF-8
		b.WriteByte('"')
	}
	b.WriteByte('}')
	t = v.series(b.String())
	v.mu.Lock()
	v.made[string(key)] = t
	v.mu.Unlock()
	return t
}

// CounterVec is a counter with labels.
type CounterVec struct{ vec[*Counter] }

// WithLabelValues returns the series of these label values, in the order the
// labels were declared.
func (v *CounterVec) WithLabelValues(values ...string) *Counter { return v.with(values) }

// GaugeVec is a gauge with labels.
type GaugeVec struct{ vec[*Gauge] }

// WithLabelValues returns the series of these label values, in the order the
// labels were declared.
func (v *GaugeVec) WithLabelValues(values ...string) *Gauge { return v.with(values) }

// HistogramVec is a histogram with labels.
type HistogramVec struct{ vec[*Histogram] }

// WithLabelValues returns the series of these label values, in the order the
// labels were declared.
func (v *HistogramVec) WithLabelValues(values ...string) *Histogram { return v.with(values) }

// set is one process's metrics and their help texts.
type set struct {
	s    *vm.Set
	help map[string]string // by metric name
}

func (s *set) counter(name string) *Counter { return &Counter{s.s.GetOrCreateCounter(name)} }
func (s *set) gauge(name string) *Gauge     { return &Gauge{s.s.GetOrCreateGauge(name, nil)} }

func (s *set) histogram(buckets []float64) func(string) *Histogram {
	return func(name string) *Histogram {
		return &Histogram{s.s.GetOrCreatePrometheusHistogramExt(name, buckets)}
	}
}

func newCounter(s *set, name, help string) *Counter {
	s.help[name] = help
	return s.counter(name)
}

func newGauge(s *set, name, help string) *Gauge {
	s.help[name] = help
	return s.gauge(name)
}

func newHistogram(s *set, name, help string, buckets []float64) *Histogram {
	s.help[name] = help
	return s.histogram(buckets)(name)
}

func newCounterVec(s *set, name, help string, labels ...string) *CounterVec {
	s.help[name] = help
	return &CounterVec{newVec(name, labels, s.counter)}
}

func newGaugeVec(s *set, name, help string, labels ...string) *GaugeVec {
	s.help[name] = help
	return &GaugeVec{newVec(name, labels, s.gauge)}
}

func newHistogramVec(s *set, name, help string, buckets []float64, labels ...string) *HistogramVec {
	s.help[name] = help
	return &HistogramVec{newVec(name, labels, s.histogram(buckets))}
}

// write writes the set in Prometheus's text format, each # HELP line with
// its metric's help text, then the Go runtime's and the process's metrics
// (with its open and most file descriptors).
func (s *set) write(w io.Writer) error {
	var buf bytes.Buffer
	s.s.WritePrometheus(&buf)
	vm.WriteProcessMetrics(&buf)
	vm.WriteFDMetrics(&buf)
	out := bufio.NewWriter(w)
	for line := range bytes.Lines(buf.Bytes()) {
		if name, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
			if help := s.help[string(bytes.TrimSpace(name))]; help != "" {
				out.Write(bytes.TrimRight(line, "\n"))
				out.WriteByte(' ')
				out.WriteString(help)
				out.WriteByte('\n')
				continue
			}
		}
		out.Write(line)
	}
	return out.Flush() // the first write error, if any
}
