package companion_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// What the journal kept from before a crash (a kill -9 before the rest) is
// extracted when the companion starts, and taken out of the journal.
func TestMemoryExtractsWhatTheJournalKeptAtStart(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, "kyoko")
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

// An operator's forget (chorus memory forget: the store's, not the
// companion's loop) while a person's words wait for the rest: they are
// not extracted afterwards, and only what they said since is kept.
func TestMemoryOperatorForgetReachesWhatWaitsForTheRest(t *testing.T) {
	b := newMemBrain()
	r, st, dir := memRig(t, b, func(m *companion.Memory) { m.RestAfter = time.Second })
	r.userSays("I like plums.")
	for deadline := time.Now().Add(5 * time.Second); len(st.Journal().Pending()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("what was said never reached the journal")
		}
	}
	if _, err := st.Forget("user"); err != nil {
		t.Fatal(err)
	}
	r.userSays("My name is Una.")
	fs := waitFacts(t, st, "user", 1) // one write: plums, had it been kept, came with it
	if len(fs) != 1 || !strings.Contains(fs[0].Text, "Una") || occurrences(t, dir, "plums") != 0 {
		t.Fatalf("after the operator's forget: %+v; plums on disk %d times", fs, occurrences(t, dir, "plums"))
	}
}
