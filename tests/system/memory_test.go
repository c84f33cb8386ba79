package system

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Issue 29's proof from outside: three people tell two robots twenty
// facts over four conversations among filler talk, with three
// corrections; both robots are killed with -9 between conversations (once
// while one writes its memory) and started again; then each person asks
// what the robots remember about them, and one of them says "forget me".

// told is one thing a person says in a conversation.
type told struct {
	person, text string
}

// memoryScript is the four conversations. Each fact's value is what a
// recall must say (the newest value after a correction).
var memoryScript = [][]told{
	{
		{"alice", "Hi robots! My name is Alice."},
		{"bob", "Hello, my name is Bob."},
		{"alice", "I like green tea."},
		{"carol", "Good morning. My name is Carol."},
		{"bob", "I like jazz."},
		{"carol", "What a nice day it is today."},
	},
	{
		{"alice", "I live in Osaka."},
		{"bob", "I live in Kyoto."},
		{"carol", "I like tennis."},
		{"alice", "My favorite color is blue."},
		{"bob", "Robots are fun to talk to."},
		{"carol", "I live in Sapporo."},
		{"bob", "My favorite food is ramen."},
	},
	{
		{"alice", "I work as a nurse."},
		{"bob", "I work as a teacher."},
		{"carol", "My favorite animal is the owl."},
		{"alice", "I am 34 years old."},
		{"carol", "I work as an engineer."},
		{"bob", "I am 41 years old."},
		{"alice", "Did you hear the rain last night?"},
	},
	{
		{"alice", "Actually, my favorite color is green."},
		{"bob", "Actually, I work as a librarian."},
		{"carol", "Actually, I live in Nagoya."},
		{"alice", "I have a cat."},
		{"bob", "I like hiking."},
		{"carol", "I have a dog."},
	},
}

// remembered is what each person's recall must contain (20 facts), and
// what it must not (the values corrected).
var remembered = map[string][]string{
	"alice": {"Alice", "green tea", "Osaka", "green", "nurse", "34", "cat"},
	"bob":   {"Bob", "jazz", "Kyoto", "ramen", "librarian", "41", "hiking"},
	"carol": {"Carol", "tennis", "Nagoya", "owl", "engineer", "dog"},
}

var corrected = map[string][]string{"alice": {"blue"}, "bob": {"teacher"}, "carol": {"Sapporo"}}

func TestOutsideCompanionsRememberPeople(t *testing.T) {
	for _, brain := range []string{"rule", "model"} {
		t.Run(brain, func(t *testing.T) { rememberPeople(t, brain) })
	}
}

func rememberPeople(t *testing.T, brainKind string) {
	o := newOutside(t, bustest.Options{Rosters: map[string][]string{"lab": {"ann", "ben"}}})
	o.members = []string{"ann", "ben"}
	brain := ""
	extract := "rules"
	var model *llmtest.Server
	if brainKind == "model" {
		model = llmtest.New()
		model.Extract = llmtest.RuleExtract
		t.Cleanup(model.Close)
		brain = fmt.Sprintf("{provider: openai, base_url: %q, model: fake, timeout: 2500ms}", model.BaseURL())
		extract = "model"
	}
	dirs := map[string]string{}
	start := func(id string) *proc {
		dirs[id] = filepath.Join(o.dir, "memory-"+id)
		more := fmt.Sprintf("memory: {dir: %q, rest_after: 1s, extract: %s, operators: [root]}\n", dirs[id], extract)
		return o.companionWith(id, false, part{brain: brain, more: more})
	}
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	o.floor("floor-box")
	procs := map[string]*proc{"ann": start("ann"), "ben": start("ben")}
	w.onlineAfter(t, time.Time{}, "ann", "ben")
	// restart kills both robots with -9 and starts them again.
	restart := func() {
		restarted := time.Now()
		for _, id := range []string{"ann", "ben"} {
			procs[id].cmd.Process.Kill()
			<-procs[id].done
			procs[id] = start(id)
		}
		w.onlineAfter(t, restarted, "ann", "ben")
	}

	for i, conv := range memoryScript {
		facts := 0
		for _, s := range conv {
			id := o.sayAs(s.person, s.text)
			w.waitFor(t, 15*time.Second, "a grant for "+s.text, func(l line) bool {
				return l.topic == "chorus/rooms/lab/turns" && strings.Contains(l.payload, id)
			})
		}
		facts = []int{5, 11, 17, 20}[i] // facts told so far (a correction replaces one)
		// The conversation rests; each robot writes what it was told.
		midWrite := i == 2
		for _, id := range []string{"ann", "ben"} {
			if midWrite && id == "ann" {
				killWhileWriting(t, procs[id], filepath.Join(dirs[id], "ann.facts"))
				continue
			}
			o.waitFacts(t, "dev-"+id, facts, 20*time.Second)
		}
		// Killed with -9 between conversations, and started again.
		restart()
		o.waitFacts(t, "dev-ann", facts, 20*time.Second) // all there after the restart: nothing corrupted
	}

	// Each person asks; the granted robot answers from memory.
	time.Sleep(1500 * time.Millisecond) // the last conversation's words are all out
	wrong := 0
	recalled := 0
	for _, person := range []string{"alice", "bob", "carol"} {
		want := remembered[person]
		asked := time.Now()
		o.sayAs(person, "What do you remember about me?")
		l := w.waitFor(t, 15*time.Second, "an answer to "+person, func(l line) bool {
			if l.at.Before(asked) || !strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") || strings.HasSuffix(l.topic, "/"+person) {
				return false
			}
			m, err := protocol.DecodeMessage([]byte(l.payload), 0)
			return err == nil && contains(m.Params.To, person)
		})
		m, _ := protocol.DecodeMessage([]byte(l.payload), 0)
		said := m.Params.Message
		t.Logf("%s asked; %s said: %s", person, m.Params.From, said)
		for _, v := range want {
			if says(said, v) {
				recalled++
			} else {
				t.Errorf("%s: the recall lacks %q", person, v)
			}
		}
		for _, v := range corrected[person] {
			if says(said, v) {
				t.Errorf("%s: the recall still says the corrected %q", person, v)
			}
		}
		for other, vals := range remembered {
			for _, v := range vals {
				if other != person && !contains(want, v) && says(said, v) {
					wrong++
					t.Errorf("%s's recall says %s's %q", person, other, v)
				}
			}
		}
	}
	t.Logf("recall: %d of 20; credited to the wrong person: %d", recalled, wrong)
	if recalled < 18 || wrong != 0 {
		t.Fatalf("recall %d of 20 (want at least 18), wrong person %d (want 0)", recalled, wrong)
	}

	// Only an operator, or the person about themselves, reads a memory.
	if out, err := o.memory("bob", "list", "-device", "dev-ann", "-person", "alice"); err == nil || !strings.Contains(out, "may not") {
		t.Fatalf("bob read alice's facts: %v\n%s", err, out)
	}
	if out, err := o.memory("alice", "list", "-device", "dev-ann", "-person", "alice"); err != nil || !strings.Contains(out, "Osaka") {
		t.Fatalf("alice cannot read her own facts: %v\n%s", err, out)
	}

	// "Forget me" reaches both robots; each reports, and alice's words are
	// nowhere on disk, also after a restart.
	asked := o.sayAs("alice", "Please forget me.")
	for _, id := range []string{"ann", "ben"} {
		w.waitFor(t, 15*time.Second, id+"'s forgot report", func(l line) bool {
			return l.topic == "chorus/rooms/lab/forgot/"+id && strings.Contains(l.payload, `"person":"alice"`) && strings.Contains(l.payload, asked)
		})
	}
	restart()
	for _, id := range []string{"ann", "ben"} {
		for _, v := range []string{"Alice", "green tea", "Osaka", "nurse", "blue", "alice"} {
			if n := occurrences(t, dirs[id], v); n != 0 {
				t.Errorf("%s: %q is still on disk %d times after forget me", id, v, n)
			}
		}
		if occurrences(t, dirs[id], "Kyoto") == 0 {
			t.Errorf("%s: bob's facts went with alice's", id)
		}
	}
	if out, err := o.memory("root", "list", "-device", "dev-ann,dev-ben", "-person", "alice"); err != nil || strings.Contains(out, "alice\t") {
		t.Fatalf("alice's facts are still listed: %v\n%s", err, out)
	}
}

// onlineAfter waits until each of ids announced itself online after at
// (a restarted process, not its last life's retained presence).
func (w *watcher) onlineAfter(t *testing.T, at time.Time, ids ...string) {
	t.Helper()
	for _, id := range ids {
		w.waitFor(t, 15*time.Second, id+" online again", func(l line) bool {
			return l.at.After(at) && l.topic == "chorus/rooms/lab/presence/"+id && strings.Contains(l.payload, `"online":true`)
		})
	}
	// Its subscriptions are in place when it votes on a message (its
	// presence goes out as it connects, before it subscribes).
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("%v do not vote on a message within 30s of coming online", ids)
		}
		id := protocol.NewID()
		b, _ := json.Marshal(protocol.NewMessage(id, "user", nil, "Hello?", ""))
		w.o.pub("user", "chorus/rooms/lab/messages/user", string(b), false)
		voted := true
		for _, who := range ids {
			_, ok := w.lookFor(3*time.Second, func(l line) bool {
				return l.topic == "chorus/rooms/lab/states/"+who && strings.Contains(l.payload, id)
			})
			voted = voted && ok
		}
		if voted {
			return
		}
	}
}

// says reports whether text has word (a whole word, any case).
func says(text, word string) bool {
	return regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(word) + `\b`).MatchString(text)
}

// sayAs publishes person's message into the room and returns its id.
func (o *outside) sayAs(person, text string) string {
	o.t.Helper()
	id := protocol.NewID()
	b, _ := json.Marshal(protocol.NewMessage(id, person, nil, text, ""))
	o.pub(person, "chorus/rooms/lab/messages/"+person, string(b), false)
	return id
}

// memory runs chorus memory as user.
func (o *outside) memory(user string, args ...string) (string, error) {
	all := append([]string{args[0], "-broker", o.url, "-as", user, "-password-env", "PW", "-timeout", "10s"}, args[1:]...)
	cmd := exec.Command(o.chorus, append([]string{"memory"}, all...)...)
	cmd.Env = append(os.Environ(), "PW="+password(user))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitFacts waits until device remembers n facts in all (as the operator
// lists them).
func (o *outside) waitFacts(t *testing.T, device string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var out string
	for time.Now().Before(deadline) {
		var err error
		out, err = o.memory("root", "list", "-device", device)
		if err == nil && strings.Count(out, "\n") >= n && !strings.Contains(out, "nothing remembered") {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s does not remember %d facts within %v:\n%s", device, n, within, out)
}

// killWhileWriting kills p with -9 the moment its facts file grows.
func killWhileWriting(t *testing.T, p *proc, file string) {
	t.Helper()
	size := func() int64 {
		if fi, err := os.Stat(file); err == nil {
			return fi.Size()
		}
		return 0
	}
	before := size()
	deadline := time.Now().Add(20 * time.Second)
	for size() == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", file)
		}
		time.Sleep(200 * time.Microsecond)
	}
	p.cmd.Process.Kill()
	<-p.done
	t.Logf("killed %s with -9 while it wrote its memory (%d bytes, was %d)", p.name, size(), before)
}

// occurrences counts s in every file under dir.
func occurrences(t *testing.T, dir, s string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		n += bytes.Count(b, []byte(s))
		return nil
	})
	return n
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
