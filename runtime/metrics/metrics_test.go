package metrics

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRejectCountsEveryTimeLogsOnce(t *testing.T) {
	m := New()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for range 5 {
		m.Reject(log, "state", "kyoko", "syntax", errors.New("bad"))
	}
	m.Reject(log, "state", "hana", "syntax", errors.New("bad"))
	if got := testutil.ToFloat64(m.BadInput.WithLabelValues("state", "syntax")); got != 6 {
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
