package companion_test

import (
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// What the journal kept from before a crash (a kill -9 before the rest) is
// extracted when the companion starts, and taken out of the journal.
func TestMemoryExtractsWhatTheJournalKeptAtStart(t *testing.T) {
	dir := t.TempDir()
	st, err := memory.Open(dir, "kyoko", memory.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, h := range []memory.Heard{
		{Person: "pat", MessageID: "m1", Text: "My name is Patricia."},
		{Person: "sam", MessageID: "m2", Text: "I like plums."},
	} {
		if err := st.Journal().Append(h); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t)
	r.startFloor(time.Second)
	// An hour's rest: only the start extracts.
	r.startCompanion(cards()[0], newMemBrain(), func(c *companion.Config) {
		c.Memory = &companion.Memory{Store: st, RestAfter: time.Hour}
	})
	waitFacts(t, st, "pat", 1)
	waitFacts(t, st, "sam", 1)
	deadline := time.Now().Add(5 * time.Second)
	for occurrences(t, dir, "My name is Patricia.")+occurrences(t, dir, "I like plums.") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("extracted, the words are still in the journal: %+v", st.Journal().Pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
