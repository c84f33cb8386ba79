package memory

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// Met reports whether this companion has talked with person before: a
// fact about them, or a met record (Touch).
func (s *Store) Met(person string) bool {
	st := s.cur()
	if _, ok := st.met[person]; ok {
		return true
	}
	for _, e := range st.facts {
		if e.f.Person == person {
			return true
		}
	}
	return false
}

// Facts is the live facts of person ("" everyone), oldest first.
func (s *Store) Facts(person string) []Fact {
	var out []Fact
	for _, e := range s.cur().facts {
		if person == "" || e.f.Person == person {
			out = append(out, e.f)
		}
	}
	return out
}

// People is everyone with a fact or a met record, sorted.
func (s *Store) People() []string {
	st := s.cur()
	seen := map[string]bool{}
	for p := range st.met {
		seen[p] = true
	}
	for _, e := range st.facts {
		seen[e.f.Person] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Recall is what to put in a prompt for a message from people: the pinned
// core of each person (the name first, then the newest pinned facts; at
// most 3 each), then up to n more of their facts most relevant to message
// (lexical overlap weighted by rarity, newer first on a tie; a fact that
// shares no word with message is not recalled). No fact appears twice,
// and no fact of someone not in people is ever returned.
func (s *Store) Recall(people []string, message string, n int) []Fact {
	st := s.cur()
	out, taken := core(st, people)
	who := map[string]bool{}
	for _, p := range people {
		who[p] = true
	}
	for _, e := range s.rank(st, func(e *entry) bool { return who[e.f.Person] && !taken[e] }, message, n) {
		out = append(out, e.f)
	}
	return out
}

// Names is the name fact of each of people that has one, in the order
// of people: what a message may recall about the others present (a name
// says who is who; every other fact is only its person's).
func (s *Store) Names(people []string) []Fact {
	st := s.cur()
	var out []Fact
	for _, p := range people {
		for i := len(st.facts) - 1; i >= 0; i-- {
			if e := st.facts[i]; e.f.Person == p && e.f.Key == keyName {
				out = append(out, e.f)
				break
			}
		}
	}
	return out
}

// core is the pinned core of each of people: the name first, then the
// newest pinned facts, at most maxCore each.
func core(st *state, people []string) ([]Fact, map[*entry]bool) {
	var out []Fact
	taken := map[*entry]bool{}
	done := map[string]bool{}
	for _, p := range people {
		if done[p] {
			continue // a repeat
		}
		done[p] = true
		var core []*entry
		for i := len(st.facts) - 1; i >= 0; i-- {
			if e := st.facts[i]; e.f.Person == p && e.f.Pinned {
				core = append(core, e)
			}
		}
		slices.SortStableFunc(core, func(a, b *entry) int {
			return cmp.Compare(rankCore(a), rankCore(b))
		})
		for _, e := range core[:min(len(core), maxCore)] {
			out = append(out, e.f)
			taken[e] = true
		}
	}
	return out, taken
}

func rankCore(e *entry) int {
	if e.f.Key == keyName {
		return 0
	}
	return 1
}

// Search is up to n facts of person ("" everyone) most relevant to query,
// as Recall ranks them; an empty query gives the n newest.
func (s *Store) Search(person, query string, n int) []Fact {
	st := s.cur()
	match := func(e *entry) bool { return person == "" || e.f.Person == person }
	var out []Fact
	if len(tokens(query)) == 0 {
		for i := len(st.facts) - 1; i >= 0 && len(out) < n; i-- {
			if match(st.facts[i]) {
				out = append(out, st.facts[i].f)
			}
		}
		return out
	}
	for _, e := range s.rank(st, match, query, n) {
		out = append(out, e.f)
	}
	return out
}

// rank scores the facts that match by the words they share with text,
// each word weighted by its rarity among them, and returns the best n.
func (s *Store) rank(st *state, match func(*entry) bool, text string, n int) []*entry {
	if n <= 0 {
		return nil
	}
	q := tokens(text)
	if len(q) == 0 {
		return nil
	}
	type scored struct {
		e     *entry
		i     int
		score float64
	}
	df := make([]int, len(q))
	var found []scored
	for i, e := range st.facts {
		if !match(e) {
			continue
		}
		any := false
		for j, t := range q {
			if _, ok := slices.BinarySearch(e.toks, t); ok {
				df[j]++
				any = true
			}
		}
		if any {
			found = append(found, scored{e: e, i: i})
		}
	}
	if len(found) == 0 {
		return nil
	}
	for k := range found {
		var sc float64
		for j, t := range q {
			if _, ok := slices.BinarySearch(found[k].e.toks, t); ok {
				sc += 1 / float64(df[j]) // rarer words weigh more
			}
		}
		found[k].score = sc
	}
	slices.SortFunc(found, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.i, a.i) // newer first
	})
	out := make([]*entry, 0, min(n, len(found)))
	for _, x := range found[:min(n, len(found))] {
		out = append(out, x.e)
	}
	return out
}

// stop words carry no meaning for recall.
var stop = map[string]bool{
	"a": true, "an": true, "the": true, "i": true, "me": true, "my": true, "you": true, "your": true,
	"is": true, "am": true, "are": true, "was": true, "be": true, "do": true, "doe": true, "did": true,
	"to": true, "of": true, "in": true, "on": true, "at": true, "and": true, "or": true, "it": true,
	"what": true, "who": true, "how": true, "that": true, "this": true, "with": true, "for": true,
	"have": true, "ha": true, "not": true, "we": true, "about": true,
}

// tokens is the words of s for recall, sorted and unique: lower-cased
// words of letters and digits with a plural "s" cut ("likes" and "like"
// match), stop words dropped; runs of Han, kana and Hangul give their
// character pairs (a pair of hiragana only is a particle or an ending,
// dropped), or the character itself when alone.
func tokens(s string) []string {
	var out []string
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		if cjk(word[0]) {
			if len(word) == 1 {
				if !hira(word[0]) {
					out = append(out, string(word))
				}
			}
			for i := 0; i+1 < len(word); i++ {
				if !(hira(word[i]) && hira(word[i+1])) {
					out = append(out, string(word[i:i+2]))
				}
			}
		} else {
			w := string(word)
			if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
				w = w[:len(w)-1]
			}
			if !stop[w] {
				out = append(out, w)
			}
		}
		word = word[:0]
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case cjk(r):
			if len(word) > 0 && !cjk(word[0]) {
				flush()
			}
			word = append(word, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if len(word) > 0 && cjk(word[0]) {
				flush()
			}
			word = append(word, r)
		default:
			flush()
		}
	}
	flush()
	slices.Sort(out)
	return slices.Compact(out)
}

func cjk(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー'
}

func hira(r rune) bool { return unicode.Is(unicode.Hiragana, r) }

// Touched reports whether person has a met record (Touch): a companion
// writes it when it answers them (its already_replied), where Met also
// counts the facts it learned, or was given, about them.
func (s *Store) Touched(person string) bool {
	_, ok := s.cur().met[person]
	return ok
}
