package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/prompts"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// MemoryOptions are a run of `chorus bench memory` (issue 29).
type MemoryOptions struct {
	N        int           // (2): messages per mode, memory on and off alternating in rooms of streamChunk
	Messages int           // (1) and (3): messages rendered and recalled (no room: cheap)
	Facts    int           // (1), (2) and (3): facts in each store, over MemoryPeople people
	Turns    int           // (4): user turns written
	TTFT     time.Duration // (2): the model's time to the first token
	TPS      float64       // and its tokens per second after it
	// Speak, when set, are the model's words in (2) (a test's short ones;
	// default Talk).
	Speak func(me, lang string, turn int) (float64, string)
}

// MemoryPeople is how many people the stores know, and MemoryRecall
// the facts recalled per message beside the pinned core (the companion's
// default, memory.DefaultRecall).
const (
	MemoryPeople = 20
	MemoryRecall = memory.DefaultRecall
)

// MaxMemoryFacts is the most facts the bench's people can state: each
// person's name, home, job and age, a favourite of each kind, what they
// have and what they like.
var MaxMemoryFacts = MemoryPeople * (4 + len(favourites) + len(haves) + len(likes))

// Memory measures the memory's cost (issue 29) and prints one table:
// (1) the prompt tokens memory adds to the state prompt; (2) the floor's
// grant → the granted robot's first audio with memory on and off,
// alternating in one run; (3) Store.Recall's time on a store of o.Facts
// facts; (4) the facts file after o.Turns user turns; (5) the command
// that measures the binary's size (a cross build, not run here).
func Memory(ctx context.Context, w io.Writer, o MemoryOptions) error {
	if o.Facts < MemoryPeople || o.Facts > MaxMemoryFacts {
		return fmt.Errorf("-facts: want %d to %d (what %d people of the bench can state), got %d", MemoryPeople, MaxMemoryFacts, MemoryPeople, o.Facts)
	}
	tmp, err := os.MkdirTemp("", "chorus-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lim := memLimits(o.Facts)
	st, err := memory.Open(tmp, "recall", lim, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := fillStore(st, o.Facts); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(29, 1))
	msgs := make([]memMessage, o.Messages)
	for i := range msgs {
		msgs[i] = newMemMessage(rng)
	}

	// (1) and (3).
	added, err := promptTokens(st, msgs)
	if err != nil {
		return err
	}
	recalls := make([]time.Duration, len(msgs))
	for i, m := range msgs {
		t0 := time.Now()
		st.Recall(m.people, m.text, MemoryRecall)
		recalls[i] = time.Since(t0)
	}

	// (2): every companion's store starts with the same facts.
	memDir := tmp + "/companions"
	for _, id := range []string{"ann", "ben", "cat"} {
		cs, err := memory.Open(memDir, id, lim, nil)
		if err != nil {
			return err
		}
		err = fillStore(cs, o.Facts)
		cs.Close()
		if err != nil {
			return err
		}
	}
	say := func(round int) (string, string) { return selfStatement(rand.New(rand.NewPCG(uint64(round), 2)), round) }
	gaps := map[bool][]time.Duration{}
	for done := 0; done < o.N; done += streamChunk {
		k := min(streamChunk, o.N-done)
		for _, on := range []bool{true, false} {
			c := TypedCase{Latency: o.TTFT, Rounds: k, Paced: Paced{TPS: o.TPS, Speak: o.Speak},
				Say: func(r int) (string, string) { return say(done + r) }}
			if on {
				c.Memory = memDir
			}
			res, err := Typed(ctx, c)
			if err != nil {
				return fmt.Errorf("(2), memory %t: %w", on, err)
			}
			gaps[on] = append(gaps[on], res.GrantToAudio...)
		}
	}
	written := 0
	for _, id := range []string{"ann", "ben", "cat"} {
		cs, err := memory.Open(memDir, id, lim, nil)
		if err != nil {
			return err
		}
		written += len(slices.DeleteFunc(cs.Facts(""), func(f memory.Fact) bool { return f.MessageID == "" || !strings.HasPrefix(f.MessageID, "u") }))
		cs.Close()
	}

	// (4).
	disk, err := diskAfter(tmp+"/disk", o.Turns)
	if err != nil {
		return err
	}

	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
	us := func(d time.Duration) string { return fmt.Sprintf("%dµs", d.Microseconds()) }
	met := func(ok bool) string { return map[bool]string{true: "met", false: "NOT MET"}[ok] }
	fmt.Fprintf(w, "memory (issue 29): stores of %d facts over %d people stated as the rules extract them; recall %d beside the pinned core; tokens ≈ characters/4\n",
		o.Facts, MemoryPeople, MemoryRecall)
	fmt.Fprintf(w, "  %-52s %-10s %-10s %-14s %s\n", "", "p50", "p95", "p99 / max", "goal")
	tok := slices.Clone(added)
	slices.Sort(tok)
	p95 := pct(tok, 0.95)
	fmt.Fprintf(w, "  %-52s %-10d %-10d max %-10d p95 ≤ 250: %s\n", fmt.Sprintf("(1) prompt tokens added (state prompt, n=%d)", len(added)),
		pct(tok, 0.5), p95, tok[len(tok)-1], met(p95 <= 250))
	off, on := sortedDurations(gaps[false]), sortedDurations(gaps[true])
	fmt.Fprintf(w, "  %-52s %-10s %-10s max %-10s\n", fmt.Sprintf("(2) grant → first audio, memory off (n=%d)", len(off)), ms(pct(off, 0.5)), ms(pct(off, 0.95)), ms(off[len(off)-1]))
	fmt.Fprintf(w, "  %-52s %-10s %-10s max %-10s\n", fmt.Sprintf("    grant → first audio, memory on (n=%d)", len(on)), ms(pct(on, 0.5)), ms(pct(on, 0.95)), ms(on[len(on)-1]))
	diff := pct(on, 0.95) - pct(off, 0.95)
	fmt.Fprintf(w, "  %-52s %-10s %-10s %-14s p95 ≤ +10ms: %s\n", "    on − off", fmt.Sprintf("%+.1fms", float64((pct(on, 0.5)-pct(off, 0.5)).Microseconds())/1000),
		fmt.Sprintf("%+.1fms", float64(diff.Microseconds())/1000), "", met(diff <= 10*time.Millisecond))
	fmt.Fprintf(w, "  %-52s (model %v to the first token, %g tokens/s; rules extraction, rest_after 1s; the three stores hold %d facts from the rounds' messages at the end)\n",
		"", o.TTFT, o.TPS, written)
	rs := sortedDurations(recalls)
	fmt.Fprintf(w, "  %-52s %-10s %-10s p99 %-10s p95 ≤ 5ms: %s\n", fmt.Sprintf("(3) Store.Recall at %d facts, 3 people (n=%d)", o.Facts, len(rs)),
		us(pct(rs, 0.5)), us(pct(rs, 0.95)), us(pct(rs, 0.99)), met(pct(rs, 0.95) <= 5*time.Millisecond))
	bound := "holds"
	if disk.largest > memory.DefaultBytes {
		bound = "does NOT hold for the file (it bounds the live records; the file, about twice that: memory's doc, Bounds)"
	}
	fmt.Fprintf(w, "  %-52s file %d bytes, %d live facts, %d met records; largest file seen %d bytes: the 1 MiB bound %s\n",
		fmt.Sprintf("(4) disk after %d turns (default limits)", o.Turns), disk.size, disk.facts, disk.met, disk.largest, bound)
	fmt.Fprintf(w, "  %-52s not measured here (a cross build): GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o chorusd ./cmd/chorusd && stat -c %%s chorusd; goal ≤ 16 MB\n",
		"(5) chorusd linux/arm64, stripped")
	return nil
}

// memLimits are the default limits, widened to hold facts.
func memLimits(facts int) memory.Limits {
	lim := memory.Limits{}
	if facts > memory.DefaultTotal {
		lim.Total = facts
	}
	if per := (facts + MemoryPeople - 1) / MemoryPeople; per > memory.DefaultPerPerson {
		lim.PerPerson = per
	}
	return lim
}

// promptTokens renders, for each message, the state prompt the LLM brain
// sends (prompts.State with the draft, as llm.Brain's state request) as
// the companion builds its input, with the memory's recall and without,
// and returns the tokens the recall adds.
func promptTokens(st *memory.Store, msgs []memMessage) ([]int, error) {
	card := brain.Card{ID: "ann", Name: "Ann", Language: "en"}
	out := make([]int, len(msgs))
	for i, m := range msgs {
		in := brain.Input{Card: card, History: m.history, Message: protocol.NewMessage(fmt.Sprintf("m%d", i), m.people[0], nil, m.text, ""),
			Present: []string{"ann", "ben", "cat"}, Members: []string{"ann", "ben", "cat"}, Remaining: -1}
		without := prompts.State(in, true)
		// As companion.recall does (the known event: companion.known).
		for _, f := range st.Recall(m.people, m.text, MemoryRecall) {
			in.Remembered = append(in.Remembered, memory.Fact{ID: f.ID, Person: f.Person, Key: f.Key, Text: f.Text, Pinned: f.Pinned})
		}
		in.Events = map[string]any{companion.KnownMet: st.Touched(m.people[0])}
		with := prompts.State(in, true)
		if len(in.Remembered) == 0 {
			return nil, fmt.Errorf("(1): nothing recalled for %v", m.people)
		}
		out[i] = (utf8.RuneCountInString(with) - utf8.RuneCountInString(without) + 3) / 4
	}
	return out, nil
}

// memMessage is a message of the conversation: its author first among
// the three people in it, and what was said before it.
type memMessage struct {
	people  []string
	text    string
	history []protocol.Message
}

// newMemMessage is a message from one of three people of the stores,
// after a short history of the three and the robots.
func newMemMessage(rng *rand.Rand) memMessage {
	idx := rng.Perm(MemoryPeople)[:3]
	people := []string{personID(idx[0]), personID(idx[1]), personID(idx[2])}
	var h []protocol.Message
	for j := range 6 { // the others spoke, and the robots answered
		from := []string{people[2], "ben", people[1], "cat", people[2], "ann"}[j]
		h = append(h, protocol.NewMessage(fmt.Sprintf("h%d", j), from, nil, chat[rng.IntN(len(chat))], ""))
	}
	return memMessage{people: people, text: remark(rng), history: h}
}

// remark is something a person says in a conversation: often about a
// thing people like, a place, a job, sometimes about nothing remembered.
func remark(rng *rand.Rand) string {
	switch rng.IntN(6) {
	case 0:
		return fmt.Sprintf("Do you remember what I said about %s?", likes[rng.IntN(len(likes))])
	case 1:
		return fmt.Sprintf("We went to %s last weekend and it rained the whole time.", homes[rng.IntN(len(homes))])
	case 2:
		return fmt.Sprintf("I had %s for lunch today, and then a long nap.", likes[rng.IntN(len(likes))])
	case 3:
		f := favourites[rng.IntN(len(favourites))]
		return fmt.Sprintf("What is your favourite %s? Mine changes every year.", f.kind)
	case 4:
		return fmt.Sprintf("Work was long today; being %s is tiring.", jobs[rng.IntN(len(jobs))])
	default:
		return chat[rng.IntN(len(chat))]
	}
}

// selfStatement is a round of (2): one of three people of the stores
// says something about themselves ("My name is X. I like Y."), so that
// memory has something to recall and to write.
func selfStatement(rng *rand.Rand, round int) (string, string) {
	p := []int{2, 7, 11}[round%3]
	name := names[p]
	var s string
	switch round % 4 {
	case 0:
		s = fmt.Sprintf("My name is %s. I like %s.", name, likes[rng.IntN(len(likes))])
	case 1:
		s = fmt.Sprintf("I live in %s and I work as %s. What should we do today?", homes[rng.IntN(len(homes))], jobs[rng.IntN(len(jobs))])
	case 2:
		f := favourites[rng.IntN(len(favourites))]
		s = fmt.Sprintf("My favourite %s is %s. Do you have one?", f.kind, f.values[rng.IntN(len(f.values))])
	default:
		s = fmt.Sprintf("Hello again, it's %s. I have %s now, and I really love %s.", name, haves[rng.IntN(len(haves))], likes[rng.IntN(len(likes))])
	}
	return personID(p), s
}

// fillStore adds n facts over MemoryPeople people, each extracted by the
// rules from a statement of theirs, as a rest writes them.
func fillStore(st *memory.Store, n int) error {
	var facts []memory.Fact
	for p := range MemoryPeople {
		per := n / MemoryPeople
		if p < n%MemoryPeople {
			per++
		}
		for i, text := range personStatements(p)[:per] {
			f, err := extracted(personID(p), fmt.Sprintf("fill-%d-%d", p, i), text)
			if err != nil {
				return err
			}
			facts = append(facts, f)
		}
	}
	for len(facts) > 0 { // in writes of a rest's size
		k := min(len(facts), 100)
		if _, err := st.Add(facts[:k]...); err != nil {
			return err
		}
		facts = facts[k:]
	}
	if got := len(st.Facts("")); got != n {
		return fmt.Errorf("the store holds %d facts, want %d", got, n)
	}
	return nil
}

// extracted is the one fact the rules find in a statement.
func extracted(person, messageID, text string) (memory.Fact, error) {
	sts := memory.Extract(text)
	if len(sts) != 1 {
		return memory.Fact{}, fmt.Errorf("the rules found %d statements in %q, want 1", len(sts), text)
	}
	s := sts[0]
	return memory.Fact{Person: person, Key: s.Key, Text: s.Text, MessageID: messageID, Pinned: s.Pinned}, nil
}

// personStatements are everything person p can say about themselves,
// one fact each, the core first, then the rest mixed.
func personStatements(p int) []string {
	out := []string{
		fmt.Sprintf("My name is %s.", names[p]),
		fmt.Sprintf("I live in %s.", homes[p%len(homes)]),
		fmt.Sprintf("I work as %s.", jobs[p%len(jobs)]),
		fmt.Sprintf("I am %d years old.", 8+p*4),
	}
	for i := 0; i < max(len(favourites), len(haves), len(likes)); i++ {
		if i < len(favourites) {
			f := favourites[i]
			out = append(out, fmt.Sprintf("My favourite %s is %s.", f.kind, f.values[(p+i)%len(f.values)]))
		}
		if i < len(haves) {
			out = append(out, fmt.Sprintf("I have %s.", haves[(p+i)%len(haves)]))
		}
		if i < len(likes) {
			out = append(out, fmt.Sprintf("I like %s.", likes[(p*7+i)%len(likes)]))
		}
	}
	return out
}

func personID(p int) string { return strings.ToLower(names[p]) }

// diskResult is the facts file after the turns.
type diskResult struct {
	size, largest int64
	facts, met    int
}

// diskAfter writes turns user turns as the companion does: the rules'
// facts of every 5 turns (a rest) in one Add, each person's meeting once,
// into a store with the default limits; it reports the file.
func diskAfter(dir string, turns int) (diskResult, error) {
	var res diskResult
	st, err := memory.Open(dir, "disk", memory.Limits{}, nil)
	if err != nil {
		return res, err
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(29, 4))
	said := map[int][]string{} // what each person stated, for corrections
	touched := map[string]bool{}
	var batch []memory.Fact
	for t := range turns {
		p := rng.IntN(MemoryPeople)
		person := personID(p)
		if !touched[person] {
			touched[person] = true
			if err := st.Touch(person); err != nil {
				return res, err
			}
		}
		var text string
		switch r := rng.IntN(100); {
		case r < 25: // chat: nothing to remember
			text = chat[rng.IntN(len(chat))]
		case r < 35 && len(said[p]) > 0: // a correction: a key stated again
			text = correction(rng, p)
		default:
			all := personStatements(p)
			text = all[rng.IntN(len(all))]
			if rng.IntN(3) == 0 { // two statements in a message
				text = strings.TrimSuffix(text, ".") + ", and " + lowerFirst(all[rng.IntN(len(all))])
			}
			said[p] = append(said[p], text)
		}
		for _, s := range memory.Extract(text) {
			batch = append(batch, memory.Fact{Person: person, Key: s.Key, Text: s.Text, MessageID: fmt.Sprintf("t%d", t), Pinned: s.Pinned})
		}
		if (t+1)%5 == 0 || t == turns-1 {
			if len(batch) > 0 {
				if _, err := st.Add(batch...); err != nil {
					return res, err
				}
				batch = batch[:0]
			}
			fi, err := os.Stat(st.Path())
			if err != nil {
				return res, err
			}
			res.largest = max(res.largest, fi.Size())
		}
	}
	data, err := os.ReadFile(st.Path())
	if err != nil {
		return res, err
	}
	res.size = int64(len(data))
	res.facts = len(st.Facts(""))
	metBy := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Op, Person string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Op == "met" {
			metBy[rec.Person] = true
		}
	}
	res.met = len(metBy)
	return res, nil
}

// correction states one of p's keys again with another value.
func correction(rng *rand.Rand, p int) string {
	switch rng.IntN(5) {
	case 0:
		return fmt.Sprintf("Actually, I live in %s now.", homes[rng.IntN(len(homes))])
	case 1:
		return fmt.Sprintf("No, I work as %s.", jobs[rng.IntN(len(jobs))])
	case 2:
		return fmt.Sprintf("I am %d years old.", 8+p*4+1)
	case 3:
		f := favourites[rng.IntN(len(favourites))]
		return fmt.Sprintf("Well, my favourite %s is %s.", f.kind, f.values[rng.IntN(len(f.values))])
	default:
		return fmt.Sprintf("I don't like %s anymore.", likes[rng.IntN(len(likes))])
	}
}

func lowerFirst(s string) string {
	if strings.HasPrefix(s, "I ") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// pct is the p-th quantile of sorted s, as Summarize takes it.
func pct[T any](s []T, p float64) T { return s[min(len(s)-1, int(p*float64(len(s))))] }

func sortedDurations(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		s = []time.Duration{0}
	}
	return s
}

// What the bench's people say.
var (
	names = []string{"Alice", "Bruno", "Chika", "Daniel", "Emi", "Farid", "Grace", "Hiro", "Ines", "Jonas",
		"Keiko", "Liam", "Maya", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tomoko"}
	homes = []string{"Kyoto", "Osaka", "a small flat near the station", "Lyon", "the old town by the river", "Nara",
		"a village outside Sendai", "Lisbon", "the blue house on Hill Street", "Kobe", "Edinburgh", "Sapporo"}
	jobs = []string{"a nurse at the city hospital", "a primary school teacher", "a bus driver", "a baker", "a software engineer",
		"a gardener", "a librarian", "a nurse", "a carpenter", "a student", "a translator", "a chef in a noodle shop"}
	haves = []string{"a cat called Mochi", "a small garden", "a red bicycle", "a younger brother", "an old piano", "a dog named Biscuit",
		"a balcony full of tomatoes", "a collection of postcards", "a sister in Canada", "a blue umbrella", "a sourdough starter",
		"a telescope", "a vintage camera", "a goldfish", "a ukulele", "a grandmother who sings", "a vegetable patch",
		"a motorbike", "a library card", "a tortoise called Sunny"}
	likes = []string{"green tea", "long walks by the river", "jigsaw puzzles", "jazz on Sunday mornings", "strawberry cake", "old films",
		"rainy days", "ramen", "football", "the piano", "trains", "crossword puzzles", "baking bread", "cherry blossoms", "cats",
		"hiking in the mountains", "spicy curry", "board games", "science fiction novels", "the beach in winter", "karaoke",
		"gardening", "black coffee", "chess", "birdwatching", "origami", "knitting", "swimming", "tennis", "folk music",
		"mystery novels", "dumplings", "camping", "painting with watercolours", "the smell of fresh bread", "yoga", "snow",
		"pancakes on Saturday", "museums", "cycling to work", "sushi", "podcasts about history", "dancing", "the radio in the morning",
		"hot springs", "pickled plums", "lemonade", "rock climbing", "photography", "poetry", "cooking for friends", "fishing",
		"the theatre", "fireworks", "mangoes", "kites", "stargazing", "learning languages", "comic books", "opera",
		"thunderstorms", "apple pie", "baseball", "cross-stitch", "sunflowers", "the zoo", "video games", "mint chocolate",
		"sailing", "flea markets", "quiet libraries", "the violin", "robots", "dinosaurs", "pottery", "ice skating", "chai",
		"autumn leaves", "long train journeys", "the festival in August", "miso soup", "running in the park", "bees",
		"tangerines", "drawing comics", "soft blankets", "hot chocolate", "the sea", "woodworking", "French songs",
		"making jam", "walking the dog", "picnics", "magic tricks", "bonsai trees", "crosswords in the paper", "tea ceremonies",
		"rollercoasters", "lighthouses", "slow mornings"}
	favourites = []struct {
		kind   string
		values []string
	}{
		{"colour", []string{"green", "deep blue", "yellow", "red", "purple", "orange"}},
		{"food", []string{"curry rice", "pizza", "okonomiyaki", "lasagne", "tempura", "dumplings"}},
		{"song", []string{"Moon River", "Yesterday", "Sukiyaki", "Imagine", "Clair de Lune"}},
		{"book", []string{"The Little Prince", "Totto-chan", "Matilda", "The Hobbit", "Anne of Green Gables"}},
		{"animal", []string{"the otter", "the owl", "the red panda", "the fox", "the elephant"}},
		{"season", []string{"spring", "summer", "autumn", "winter"}},
		{"film", []string{"My Neighbour Totoro", "Paddington", "Spirited Away", "Amelie", "Star Wars"}},
		{"sport", []string{"tennis", "football", "swimming", "baseball", "table tennis"}},
		{"drink", []string{"barley tea", "lemonade", "hot chocolate", "oolong tea", "apple juice"}},
		{"flower", []string{"the sunflower", "the tulip", "the rose", "the hydrangea", "the daisy"}},
		{"game", []string{"chess", "go", "Mario Kart", "cards", "hide and seek"}},
		{"city", []string{"Kyoto", "Paris", "Hakodate", "Vienna", "Lisbon"}},
		{"fruit", []string{"the peach", "the mango", "the strawberry", "the persimmon", "the fig"}},
		{"dessert", []string{"pudding", "mochi", "cheesecake", "shaved ice", "apple pie"}},
		{"place", []string{"the library", "the beach", "my grandmother's kitchen", "the park by the river", "the bakery on the corner"}},
	}
	chat = []string{"What a lovely day it is.", "Haha, that's funny!", "Can you tell me a story?", "Good morning, everyone.",
		"Hmm, I'm not sure about that.", "Shall we sing something together?", "That sounds like an adventure!",
		"What are you all doing today?", "Oh, I forgot my keys again.", "Let's have some tea.", "Is it going to rain later?",
		"You robots are very chatty today."}
)
