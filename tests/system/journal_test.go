package system

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// What a person said is not lost when the robot is killed with -9 before
// the conversation rests: it waits in the memory's journal on disk and is
// extracted at the next start.
func TestOutsideMemoryKeepsWhatWasHeardThroughAKill(t *testing.T) {
	o := newOutside(t, bustest.Options{Rosters: map[string][]string{"lab": {"ann"}}})
	o.members = []string{"ann"}
	dir := filepath.Join(o.dir, "memory-ann")
	// rest_after of an hour: nothing is extracted before the kill.
	more := fmt.Sprintf("memory: {dir: %q, rest_after: 1h, extract: rules, operators: [root]}\n", dir)
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	o.floor("floor-box")
	ann := o.companionWith("ann", false, part{more: more})
	w.onlineAfter(t, time.Time{}, "ann")

	o.sayAs("carol", "I like plums.")
	for deadline := time.Now().Add(15 * time.Second); occurrences(t, dir, "I like plums.") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("what carol said never reached the journal")
		}
	}
	// What was heard is on disk now, and no fact is yet.
	if out, err := o.memory("root", "list", "-device", "dev-ann", "-person", "carol"); err != nil || strings.Contains(out, "plums") {
		t.Fatalf("a fact before the rest (the test would prove nothing): %v\n%s", err, out)
	}
	ann.cmd.Process.Kill() // SIGKILL
	<-ann.done

	restarted := time.Now()
	ann = o.companionWith("ann", false, part{more: more})
	w.onlineAfter(t, restarted, "ann")
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := o.memory("root", "list", "-device", "dev-ann", "-person", "carol")
		if err == nil && strings.Contains(out, "plums") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a kill -9 before the rest and a restart, carol's fact is lost: %v\n%s", err, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	// Extracted, it is out of the journal: the words wait nowhere else.
	deadline = time.Now().Add(10 * time.Second)
	for occurrences(t, dir, "I like plums") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("what was said is still in the journal after its fact was written")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
