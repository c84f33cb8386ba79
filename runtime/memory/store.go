package memory

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Limits bound a store. Zero fields take the defaults.
type Limits struct {
	PerPerson int   // live facts of one person (default 200)
	Total     int   // live facts in all, and people with a met record (default 2000)
	Bytes     int64 // bytes of the file: its live records and an end record (default 1 MiB, at least 4 KiB); a fact's vector counts (base64: 1,536 dimensions are about 8 KiB)
}

// Defaults of Limits.
const (
	DefaultPerPerson = 200
	DefaultTotal     = 2000
	DefaultBytes     = 1 << 20
	minBytes         = 4 << 10
	compactSlack     = 4 << 10 // dead bytes tolerated beyond the live ones before compacting
	endReserve       = 32      // bytes of Limits.Bytes kept for a rewritten file's end record (at most 18 and the digits of its count)
)

func (l Limits) withDefaults() Limits {
	if l.PerPerson <= 0 {
		l.PerPerson = DefaultPerPerson
	}
	if l.Total <= 0 {
		l.Total = DefaultTotal
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	l.Bytes = max(l.Bytes, minBytes)
	return l
}

// Store is a companion's memory: its facts in memory, and the file that
// keeps them.
type Store struct {
	path, dir, companion string
	lim                  Limits
	log                  *slog.Logger
	repaired             int

	wmu  sync.Mutex // serialises writers; held across the disk
	f    *os.File   // the file, for appending (nil when closed)
	size int64      // of the file
	err  error      // sticky: the file is in an unknown state; reopen

	mu sync.RWMutex // guards st
	st *state       // replaced whole by a writer once durable

	j *Journal // what was heard and is not extracted yet
}

type entry struct {
	f    Fact
	line int64    // bytes of its record
	toks []string // lexical tokens of Key and Text, sorted, unique
	norm float64  // of f.Vec
}

type met struct {
	at   time.Time
	line int64
}

// state is the live memory. A writer clones it, changes the clone, makes
// it durable, then publishes it; readers never see a change before it is
// on disk.
type state struct {
	facts []*entry // oldest first
	byID  map[string]*entry
	met   map[string]met
	bytes int64 // of the live records
}

func newState() *state {
	return &state{byID: map[string]*entry{}, met: map[string]met{}}
}

func (st *state) clone() *state {
	c := &state{facts: slices.Clone(st.facts), byID: make(map[string]*entry, len(st.byID)), met: make(map[string]met, len(st.met)), bytes: st.bytes}
	for k, v := range st.byID {
		c.byID[k] = v
	}
	for k, v := range st.met {
		c.met[k] = v
	}
	return c
}

var (
	openMu sync.Mutex
	opened = map[string]bool{} // files open in this process
)

// ErrClosed is returned by a write to a closed Store.
var ErrClosed = errors.New("memory: store closed")

// Open opens the memory of companion in dir: it creates dir (0700) if it
// is missing, finishes an interrupted rewrite, loads <dir>/<companion>.facts
// and repairs it (a torn last line is dropped and the file truncated; a
// bad line in the middle is skipped and the file rewritten), and opens
// its journal, <dir>/<companion>.pending (Journal). companion is
// a file name: letters, digits, '.', '_' and '-', not starting with '.'.
// log may be nil.
func Open(dir, companion string, lim Limits, log *slog.Logger) (*Store, error) {
	if err := checkCompanion(companion); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := MakeDir(dir); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	path := filepath.Join(dir, companion+".facts")
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	openMu.Lock()
	if opened[abs] {
		openMu.Unlock()
		return nil, fmt.Errorf("memory: %s is already open", path)
	}
	opened[abs] = true
	openMu.Unlock()
	s := &Store{path: abs, dir: filepath.Dir(abs), companion: companion, lim: lim.withDefaults(),
		log: log.With("memory", companion)}
	if err := s.open(); err != nil {
		s.release()
		return nil, err
	}
	if s.j, err = openJournal(s.dir, strings.TrimSuffix(abs, ".facts")+".pending", s.log); err != nil {
		s.f.Close()
		s.release()
		return nil, err
	}
	return s, nil
}

func checkCompanion(c string) error {
	if c == "" || len(c) > 128 || c[0] == '.' {
		return fmt.Errorf("memory: bad companion name %q", c)
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("memory: bad companion name %q", c)
		}
	}
	return nil
}

func (s *Store) release() {
	openMu.Lock()
	delete(opened, s.path)
	openMu.Unlock()
}

func (s *Store) open() error {
	if err := s.recoverNew(); err != nil {
		return err
	}
	data, err := os.ReadFile(s.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("memory: %w", err)
	}
	created := errors.Is(err, os.ErrNotExist)
	st, good, bad, records, d := s.load(data)
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	s.f = f
	if created {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	if good < int64(len(data)) {
		// A torn last line: zero its bytes, then cut it off.
		if err := zeroRange(f, good, int64(len(data))-good); err == nil {
			err = f.Truncate(good)
			if err == nil {
				err = f.Sync()
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("memory: truncating %s: %w", s.path, err)
			}
		} else {
			f.Close()
			return fmt.Errorf("memory: %s: %w", s.path, err)
		}
	}
	s.size = good
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("memory: %s: %w", s.path, err)
	}
	s.st = st
	if d.facts > 0 || d.met > 0 {
		s.log.Warn("memory: dropping records to fit the limits", "file", s.path, "facts", d.facts, "met", d.met,
			"perPerson", s.lim.PerPerson, "total", s.lim.Total, "bytes", s.lim.Bytes)
	}
	// Rewrite (erasing the old bytes) when the file holds anything that
	// is not live: a bad line, a superseded or evicted record, a repeated
	// met record; or when it is over its bounds.
	live := len(st.facts) + len(st.met)
	if bad > 0 || records != live || s.size > s.lim.Bytes || s.size > 2*st.bytes+compactSlack {
		if err := s.rewrite(st); err != nil {
			s.f.Close()
			return err
		}
	}
	return nil
}

// drops counts what replaying or adding records removed: facts
// superseded, and facts and met records evicted by the limits.
type drops struct {
	superseded, facts, met int
}

func (d drops) any() bool { return d.superseded > 0 || d.facts > 0 || d.met > 0 }

// load replays the file. It returns the state, the offset after the last
// good line, the number of bad lines in the middle (skipped), the number
// of fact and met records replayed, and what the replay removed.
func (s *Store) load(data []byte) (st *state, good int64, bad, records int, d drops) {
	st = newState()
	for off := 0; off < len(data); {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			s.repaired++
			s.log.Warn("memory: dropping a torn last line (no newline)", "file", s.path, "offset", off, "bytes", len(data)-off)
			break
		}
		line := data[off : off+nl]
		end := off + nl + 1
		w, err := decodeLine(line)
		if err == nil {
			err = strict(line, w)
		}
		if err != nil {
			s.repaired++
			if end == len(data) {
				s.log.Warn("memory: dropping a torn last line", "file", s.path, "offset", off, "err", err)
				break
			}
			bad++
			s.log.Warn("memory: skipping a bad line", "file", s.path, "offset", off, "err", err)
			good, off = int64(end), end
			continue
		}
		switch w.Op {
		case opFact:
			if st.byID[w.ID] != nil {
				bad++
				s.repaired++
				s.log.Warn("memory: skipping a fact with a repeated id", "file", s.path, "offset", off, "id", w.ID)
			} else {
				records++
				st.apply(w.Fact, s.lim, &d)
			}
		case opMet:
			records++
			st.touch(w.Person, w.At.UTC(), s.lim, &d)
		}
		good, off = int64(end), end
	}
	return st, good, bad, records, d
}

// strict refuses a record that decodeLine lets through but that Add or
// Touch never writes: a field its op does not have, a person that is not
// an identity (protocol.ValidIdentity), a text or key longer than Add
// keeps (MaxText, MaxKey characters).
func strict(line []byte, w wire) error {
	var v any
	switch w.Op {
	case opFact:
		v = &factRecord{}
	case opMet:
		v = &metRecord{}
	case opEnd:
		v = &endRecord{}
	default:
		return fmt.Errorf("unknown op %q", w.Op)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	switch v := v.(type) {
	case *factRecord:
		if err := checkPerson(v.Person); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(v.Text); n > MaxText {
			return fmt.Errorf("a text of %d characters (at most %d)", n, MaxText)
		}
		if n := utf8.RuneCountInString(v.Key); n > MaxKey {
			return fmt.Errorf("a key of %d characters (at most %d)", n, MaxKey)
		}
	case *metRecord:
		return checkPerson(v.Person)
	}
	return nil
}

// checkPerson refuses a person that is not an identity.
func checkPerson(p string) error {
	if why := protocol.ValidIdentity(p); why != "" {
		return fmt.Errorf("person %q %s", clip(p, 40), why)
	}
	return nil
}

// MakeDir makes dir for a memory: the folder itself readable by its owner
// only (0700), the folders above it as any (0755).
func MakeDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Repaired is how many bad lines Open dropped or skipped.
func (s *Store) Repaired() int { return s.repaired }

// Path is the file of the store.
func (s *Store) Path() string { return s.path }

// Journal is what was heard and is not extracted yet: Forget of a person
// and Wipe erase it too.
func (s *Store) Journal() *Journal { return s.j }

// apply adds f (clean, with an id) to st: it removes the fact f
// supersedes (by id, of the same person; an id of another person's fact
// is cleared, one of no live fact is kept as history) and every fact of
// the same person and key, then enforces lim. It returns f as stored
// (Supersedes set to what it replaced) and counts what it removed in d.
func (st *state) apply(f Fact, lim Limits, d *drops) Fact {
	if f.Supersedes != "" {
		if e := st.byID[f.Supersedes]; e != nil && e.f.Person == f.Person {
			st.remove(e)
			d.superseded++
		} else if e != nil {
			f.Supersedes = ""
		}
	}
	if f.Key != "" {
		for _, e := range slices.Clone(st.facts) {
			if e.f.Person == f.Person && e.f.Key == f.Key {
				st.remove(e)
				d.superseded++
				if f.Supersedes == "" {
					f.Supersedes = e.f.ID
				}
			}
		}
	}
	e := &entry{f: f, line: int64(len(factLine(f))), toks: tokens(f.Key + " " + f.Text), norm: norm32(f.Vec)}
	st.facts = append(st.facts, e)
	st.byID[f.ID] = e
	st.bytes += e.line
	n := 0
	for _, x := range st.facts {
		if x.f.Person == f.Person {
			n++
		}
	}
	for ; n > lim.PerPerson; n-- {
		st.remove(st.oldest(f.Person))
		d.facts++
	}
	for len(st.facts) > lim.Total {
		st.remove(st.oldest(""))
		d.facts++
	}
	st.fit(lim, d)
	return f
}

// fit evicts until the live records and an end record fit lim.Bytes. Each
// eviction takes, in this order: the oldest met record of a person with
// no fact; the oldest unpinned fact; the oldest met record of a person
// with facts; the oldest pinned fact. So a person's core goes only when
// nothing else is left.
func (st *state) fit(lim Limits, d *drops) {
	for st.bytes > lim.Bytes-endReserve && (len(st.facts) > 0 || len(st.met) > 0) {
		has := st.withFacts()
		if p, ok := st.oldestMet(has, false); ok {
			st.dropMet(p)
			d.met++
			continue
		}
		if e := st.oldest(""); e != nil && !e.f.Pinned {
			st.remove(e)
			d.facts++
			continue
		}
		if p, ok := st.oldestMet(has, true); ok {
			st.dropMet(p)
			d.met++
			continue
		}
		st.remove(st.oldest(""))
		d.facts++
	}
}

// withFacts is the people with a live fact.
func (st *state) withFacts() map[string]bool {
	has := make(map[string]bool, len(st.facts))
	for _, e := range st.facts {
		has[e.f.Person] = true
	}
	return has
}

// oldestMet is the person of the oldest met record (the least person on a
// tie) among the people without facts, or with facts when withFacts.
func (st *state) oldestMet(has map[string]bool, withFacts bool) (string, bool) {
	var who string
	var at time.Time
	found := false
	for p, m := range st.met {
		if has[p] != withFacts {
			continue
		}
		if !found || m.at.Before(at) || m.at.Equal(at) && p < who {
			who, at, found = p, m.at, true
		}
	}
	return who, found
}

func (st *state) dropMet(p string) {
	st.bytes -= st.met[p].line
	delete(st.met, p)
}

// oldest is the oldest unpinned fact of person ("" anyone), or the oldest
// pinned one when none is unpinned; nil when there is none.
func (st *state) oldest(person string) *entry {
	var pinned *entry
	for _, e := range st.facts {
		if person != "" && e.f.Person != person {
			continue
		}
		if !e.f.Pinned {
			return e
		}
		if pinned == nil {
			pinned = e
		}
	}
	return pinned
}

func (st *state) remove(e *entry) Fact {
	if i := slices.Index(st.facts, e); i >= 0 {
		st.facts = slices.Delete(st.facts, i, i+1)
		delete(st.byID, e.f.ID)
		st.bytes -= e.line
	}
	return e.f
}

// touch records that person met the companion at at; false if already.
// It enforces lim, counting what it evicts in d.
func (st *state) touch(person string, at time.Time, lim Limits, d *drops) bool {
	if _, ok := st.met[person]; ok {
		return false
	}
	m := met{at: at, line: int64(len(metLine(person, at)))}
	st.met[person] = m
	st.bytes += m.line
	for len(st.met) > lim.Total {
		has := st.withFacts()
		p, ok := st.oldestMet(has, false)
		if !ok {
			p, _ = st.oldestMet(has, true)
		}
		st.dropMet(p)
		d.met++
	}
	st.fit(lim, d)
	return true
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// Add stores facts. It assigns ID, Created and Robot (the companion) when
// empty; applies Supersedes (an id of the same person's fact; another
// person's is ignored) and supersedes an older fact of the same person and
// key; enforces the limits (package doc, "Bounds"); and returns the facts
// stored and still live. When nothing was superseded or evicted the
// records are appended durably (write and fsync); otherwise the file is
// rewritten as Forget rewrites it, so that the superseded or evicted
// records are found nowhere in the directory. A fact that is not valid
// (no text, a person that is not an identity (protocol.ValidIdentity),
// another identity over MaxID bytes or with control characters, an id
// already stored) is refused and logged; Text is clipped to MaxText
// characters and Key to MaxKey. The error is the file's.
func (s *Store) Add(facts ...Fact) ([]Fact, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return nil, err
	}
	st := s.cur().clone()
	var buf []byte
	var stored []Fact
	var d drops
	now := time.Now().UTC().Round(0)
	for _, f := range facts {
		if f.ID == "" {
			f.ID = newID()
		}
		if f.Created.IsZero() {
			f.Created = now
		}
		f.Created = f.Created.UTC().Round(0)
		if f.Robot == "" {
			f.Robot = s.companion
		}
		c, err := clean(f)
		if err == nil {
			err = checkPerson(c.Person)
		}
		if err == nil && st.byID[c.ID] != nil {
			err = errors.New("the id is already stored")
		}
		if err != nil {
			s.log.Warn("memory: refusing a fact", "person", clip(f.Person, 40), "id", clip(f.ID, 40), "err", err)
			continue
		}
		if c.Supersedes != "" {
			if e := st.byID[c.Supersedes]; e == nil || e.f.Person != c.Person {
				s.log.Warn("memory: a fact supersedes no fact of its person; kept, superseding nothing", "person", c.Person, "supersedes", c.Supersedes)
				c.Supersedes = ""
			}
		}
		c = st.apply(c, s.lim, &d)
		buf = append(buf, factLine(c)...)
		stored = append(stored, c)
	}
	if len(buf) == 0 {
		return nil, nil
	}
	if d.any() {
		// Something is gone: erase it rather than leave it dead on disk.
		if err := s.rewrite(st); err != nil {
			return nil, err
		}
		s.publish(st)
		s.log.Debug("memory: rewrote the file", "superseded", d.superseded, "evictedFacts", d.facts, "evictedMet", d.met)
	} else if err := s.commit(st, buf); err != nil {
		return nil, err
	}
	live := stored[:0]
	for _, f := range stored {
		if st.byID[f.ID] != nil {
			live = append(live, f)
		}
	}
	return live, nil
}

// Touch records that this companion answered person (an identity,
// protocol.ValidIdentity): one durable met record per person, written the
// first time only. When the limits evict records for it, the file is
// rewritten (erasing them) instead of appended to.
func (s *Store) Touch(person string) error {
	if err := checkPerson(person); err != nil {
		return fmt.Errorf("memory: touch: %w", err)
	}
	if s.Met(person) {
		if _, ok := s.cur().met[person]; ok {
			return nil
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	st := s.cur().clone()
	at := time.Now().UTC().Round(0)
	var d drops
	if !st.touch(person, at, s.lim, &d) {
		return nil
	}
	if !d.any() {
		return s.commit(st, metLine(person, at))
	}
	if _, ok := st.met[person]; !ok && d.met == 1 && d.facts == 0 {
		return nil // its own record was all the limits took: nothing changed
	}
	if err := s.rewrite(st); err != nil {
		return err
	}
	s.publish(st)
	return nil
}

// Forget erases facts of person: those with ids (of that person; others
// are ignored), or with no ids everything about person, facts and met
// record, and their lines in the journal. The file is rewritten so that
// the forgotten records are found nowhere in the directory (see the
// package doc for the limits). It returns how many facts were forgotten.
func (s *Store) Forget(person string, ids ...string) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		if err := s.j.Forget(person); err != nil {
			return 0, err
		}
	}
	st := s.cur().clone()
	n := 0
	for _, e := range slices.Clone(st.facts) {
		if e.f.Person == person && (len(ids) == 0 || slices.Contains(ids, e.f.ID)) {
			st.remove(e)
			n++
		}
	}
	if len(ids) == 0 {
		if m, ok := st.met[person]; ok {
			st.bytes -= m.line
			delete(st.met, person)
		}
	}
	if err := s.rewrite(st); err != nil {
		return 0, err
	}
	s.publish(st)
	s.log.Info("memory: forgot", "person", person, "facts", n, "all", len(ids) == 0)
	return n, nil
}

// Wipe erases everything: every fact and met record, and the journal,
// from disk too. It returns how many facts were forgotten.
func (s *Store) Wipe() (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return 0, err
	}
	if err := s.j.Clear(); err != nil {
		return 0, err
	}
	n := len(s.cur().facts)
	st := newState()
	if err := s.rewrite(st); err != nil {
		return 0, err
	}
	s.publish(st)
	s.log.Info("memory: wiped", "facts", n)
	return n, nil
}

// Close closes the file. It is idempotent.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if jerr := s.j.Close(); err == nil {
		err = jerr
	}
	s.f = nil
	s.release()
	if err != nil {
		return fmt.Errorf("memory: closing %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) writable() error {
	if s.f == nil {
		return ErrClosed
	}
	return s.err
}

func (s *Store) cur() *state {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st
}

func (s *Store) publish(st *state) {
	s.mu.Lock()
	s.st = st
	s.mu.Unlock()
}

// commit appends buf, syncs, compacts when the file is over Limits.Bytes
// or holds too many dead bytes, and publishes st. On a failed append the file is cut back to its
// size before, and st is not published.
func (s *Store) commit(st *state, buf []byte) error {
	n, err := s.f.Write(buf)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		if n > 0 {
			if terr := s.f.Truncate(s.size); terr != nil {
				s.err = fmt.Errorf("memory: %s is in an unknown state; reopen it: %w", s.path, terr)
			} else if _, serr := s.f.Seek(s.size, io.SeekStart); serr != nil {
				s.err = fmt.Errorf("memory: %s is in an unknown state; reopen it: %w", s.path, serr)
			}
		}
		return fmt.Errorf("memory: appending to %s: %w", s.path, err)
	}
	s.size += int64(n)
	if s.size > s.lim.Bytes || s.size > 2*st.bytes+compactSlack {
		if err := s.rewrite(st); err != nil {
			// The append is durable; only the compaction failed.
			s.log.Warn("memory: compaction failed", "file", s.path, "err", err)
		}
	}
	s.publish(st)
	return nil
}
