package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/memory"
)

// `chorus bench memory` at a tiny size runs every part and prints every
// row (no figures are checked: that is the benchmark's job). The words
// are short, so that the paced rooms end soon.
func TestMemoryBenchPrintsEveryRow(t *testing.T) {
	var out bytes.Buffer
	err := Memory(context.Background(), &out, MemoryOptions{N: 2, Messages: 50, Facts: 200, Turns: 200, TTFT: 50 * time.Millisecond, TPS: 300, Speak: shortTalk})
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"(1) prompt tokens added", "p95 ≤ 250: ", "memory off (n=2)", "memory on (n=2)", "on − off", "p95 ≤ +10ms: ",
		"(3) Store.Recall at 200 facts", "p95 ≤ 5ms: ", "(4) disk after 200 turns", "live facts", "the 1 MiB bound ", "(5) chorusd linux/arm64", "go build -trimpath"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q", want)
		}
	}
}

// The bench's people state only what the rules extract, one fact a
// statement, so that its stores hold what a companion would write.
func TestMemoryBenchStatementsAreExtracted(t *testing.T) {
	for p := range MemoryPeople {
		for _, s := range personStatements(p) {
			if _, err := extracted(personID(p), "m", s); err != nil {
				t.Error(err)
			}
		}
	}
	st, err := memory.Open(t.TempDir(), "all", memLimits(MaxMemoryFacts), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := fillStore(st, MaxMemoryFacts); err != nil { // every statement a fact of its own
		t.Fatal(err)
	}
	if err := Memory(context.Background(), &bytes.Buffer{}, MemoryOptions{Facts: MaxMemoryFacts + 1}); err == nil {
		t.Error("more facts than the people can state: no error")
	}
}
