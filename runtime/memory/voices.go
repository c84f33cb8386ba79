package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// Voices are the voiceprints a robot knows people by (docs/hearing.md,
// "Who is speaking"): per person, the speaker embeddings of some of their
// utterances, matched by cosine distance to their mean. They live beside
// the facts, in <dir>/<companion>.voices (0600, in the memory's 0700
// folder), one JSON record per line: an embedding is appended and synced
// when it is added; forgetting a person rewrites the file without them
// and zeroes the old bytes first (as the facts' file, package doc
// "Erasure"). A line a kill -9 cut short is dropped when the file is
// opened, and the file rewritten without it.
//
// Voices is safe for use by several goroutines: the ear matches and
// enrols, the memory keeper and the control server forget.
type Voices struct {
	path string
	dir  string
	lim  VoiceLimits
	log  *slog.Logger

	mu       sync.Mutex
	f        *os.File
	people   map[string]*voiceprint
	repaired int
}

// VoiceLimits bound a robot's voiceprints.
type VoiceLimits struct {
	PerPerson int // embeddings kept per person (default 16; the oldest go)
	People    int // people (default 64; a new one beyond is refused)
}

// Default VoiceLimits.
const (
	DefaultVoicesPerPerson = 16
	DefaultVoicePeople     = 64
)

// voiceprint is one person's embeddings, oldest first, and their mean
// (unit length).
type voiceprint struct {
	samples []voiceRecord
	mean    []float64
}

// voiceRecord is a line of the file.
type voiceRecord struct {
	Op     string    `json:"op"` // "voice"
	Person string    `json:"person"`
	At     time.Time `json:"at"`
	Model  string    `json:"model,omitempty"`
	Vec    Vector    `json:"vec"`
}

const opVoice = "voice"

// maxVoiceLine bounds a record's line: an embedding of MaxDims, base64,
// and its fields.
const maxVoiceLine = 4*MaxDims*4/3 + 1024

// VoicePerson is what Voices holds of one person (List).
type VoicePerson struct {
	Person  string    `json:"person"`
	Samples int       `json:"samples"`
	Dims    int       `json:"dims"`
	Model   string    `json:"model,omitempty"`
	Updated time.Time `json:"updated"`
}

// OpenVoices opens (creating) the voiceprints of companion in dir.
func OpenVoices(dir, companion string, lim VoiceLimits, log *slog.Logger) (*Voices, error) {
	if err := checkCompanion(companion); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if lim.PerPerson <= 0 {
		lim.PerPerson = DefaultVoicesPerPerson
	}
	if lim.People <= 0 {
		lim.People = DefaultVoicePeople
	}
	if err := MakeDir(dir); err != nil {
		return nil, fmt.Errorf("memory: voices: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dir, companion+".voices"))
	if err != nil {
		return nil, fmt.Errorf("memory: voices: %w", err)
	}
	v := &Voices{path: path, dir: filepath.Dir(path), lim: lim, log: log.With("memory", companion), people: map[string]*voiceprint{}}
	if err := v.recoverNew(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("memory: voices: %w", err)
	}
	torn := !bytes.HasSuffix(data, []byte("\n")) && len(data) > 0
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) == 0 {
			continue
		}
		if len(line) > maxVoiceLine { // no record is this long: only this line goes
			v.repaired++
			continue
		}
		r, err := decodeVoiceLine(line)
		if errors.Is(err, errEndLine) {
			continue // a rewrite's end: the lines after it were appended since
		}
		if err != nil {
			v.repaired++
			continue
		}
		v.add(r)
	}
	if torn || v.repaired > 0 {
		v.log.Warn("memory: voices: bad or torn lines dropped; the file is rewritten without them", "file", path, "lines", max(v.repaired, 1))
		v.repaired = max(v.repaired, 1)
		if err := v.rewrite(); err != nil {
			return nil, err
		}
	}
	if v.f == nil {
		if v.f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("memory: voices: %w", err)
		}
	}
	return v, nil
}

// recoverNew finishes a rewrite a crash interrupted: a complete .new
// replaces the file (its old bytes zeroed), an incomplete one is erased.
func (v *Voices) recoverNew() error {
	tmp := v.path + ".new"
	data, err := os.ReadFile(tmp)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	if !complete(data) {
		return eraseFile(tmp)
	}
	if f, err := os.OpenFile(v.path, os.O_RDWR, 0); err == nil {
		zerr := zeroFile(f)
		f.Close()
		if zerr != nil {
			v.log.Warn("memory: voices: zeroing the old file", "err", zerr)
		}
	}
	if err := os.Rename(tmp, v.path); err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	return syncDir(v.dir)
}

func decodeVoiceLine(line []byte) (voiceRecord, error) {
	var r voiceRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		var w wire
		if json.Unmarshal(line, &w) == nil && w.Op == opEnd {
			return r, errEndLine
		}
		return r, fmt.Errorf("memory: voices: %w", err)
	}
	switch {
	case r.Op != opVoice:
		return r, fmt.Errorf("memory: voices: op %q", r.Op)
	case checkPerson(r.Person) != nil:
		return r, checkPerson(r.Person)
	case len(r.Vec) == 0 || norm32(r.Vec) == 0:
		return r, errors.New("memory: voices: an empty embedding")
	case len(r.Model) > 200:
		return r, errors.New("memory: voices: a model name over 200 bytes")
	}
	return r, nil
}

var errEndLine = errors.New("an end line")

// add puts r in its person's voiceprint (in memory), dropping the oldest
// beyond the limit; false when the person is new and there are too many.
func (v *Voices) add(r voiceRecord) bool {
	p := v.people[r.Person]
	if p == nil {
		if len(v.people) >= v.lim.People {
			return false
		}
		p = &voiceprint{}
		v.people[r.Person] = p
	}
	if len(p.samples) > 0 && len(p.samples[0].Vec) != len(r.Vec) {
		p.samples = nil // another model's: the newest wins
	}
	p.samples = append(p.samples, r)
	if len(p.samples) > v.lim.PerPerson {
		p.samples = slices.Clone(p.samples[len(p.samples)-v.lim.PerPerson:])
	}
	p.mean = meanUnit(p.samples)
	return true
}

// Add adds embeddings of person's voice (of model), each synced to disk
// before Add returns. A person beyond the limit of people is refused; past
// the limit of embeddings per person, the oldest go (the file is
// rewritten without them).
func (v *Voices) Add(person, model string, at time.Time, vecs ...[]float32) error {
	if err := checkPerson(person); err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.f == nil {
		return errors.New("memory: voices: closed")
	}
	var buf []byte
	over := false
	for _, vec := range vecs {
		r := voiceRecord{Op: opVoice, Person: person, At: at.UTC(), Model: model, Vec: Vector(slices.Clone(vec))}
		if len(r.Vec) == 0 || len(r.Vec) > MaxDims || norm32(r.Vec) == 0 {
			return fmt.Errorf("memory: voices: an embedding of %d dimensions (1 to %d, not all zero)", len(r.Vec), MaxDims)
		}
		if p := v.people[person]; p != nil && (len(p.samples) >= v.lim.PerPerson || len(p.samples[0].Vec) != len(r.Vec)) {
			over = true
		}
		if !v.add(r) {
			return fmt.Errorf("memory: voices: %s is not added: this robot knows %d voices already", person, v.lim.People)
		}
		buf = append(buf, encode(r)...)
	}
	if over {
		return v.rewrite()
	}
	if _, err := v.f.Write(buf); err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	if err := v.f.Sync(); err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	return nil
}

// Forget erases the voiceprint of person made before (all of it with a
// zero before): the file is rewritten without it and the old bytes
// zeroed. It reports how many embeddings went.
func (v *Voices) Forget(person string, before time.Time) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.people[person]
	if p == nil || v.f == nil {
		return 0, nil
	}
	n := len(p.samples)
	if !before.IsZero() {
		p.samples = slices.DeleteFunc(p.samples, func(r voiceRecord) bool { return r.At.Before(before) })
		n -= len(p.samples)
		p.mean = meanUnit(p.samples)
	}
	if before.IsZero() || len(p.samples) == 0 {
		delete(v.people, person)
	}
	if n == 0 {
		return 0, nil
	}
	return n, v.rewrite()
}

// Wipe erases every voiceprint.
func (v *Voices) Wipe() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.people = map[string]*voiceprint{}
	return v.rewrite()
}

// rewrite replaces the file by what is in memory, zeroing the old bytes.
func (v *Voices) rewrite() error {
	var buf []byte
	n := 0
	for _, person := range v.sortedPeople() {
		for _, r := range v.people[person].samples {
			buf = append(buf, encode(r)...)
			n++
		}
	}
	buf = append(buf, endLine(n)...)
	tmp := v.path + ".new"
	if err := writeSynced(tmp, buf); err != nil {
		if rerr := eraseFile(tmp); rerr != nil {
			v.log.Warn("memory: voices: removing a failed rewrite", "file", tmp, "err", rerr)
		}
		return err
	}
	if v.f != nil {
		v.f.Close()
		v.f = nil
	}
	if f, err := os.OpenFile(v.path, os.O_RDWR, 0); err == nil {
		if err := zeroFile(f); err != nil {
			v.log.Warn("memory: voices: zeroing the old file", "file", v.path, "err", err)
		}
		f.Close()
	}
	if err := os.Rename(tmp, v.path); err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	if err := syncDir(v.dir); err != nil {
		v.log.Warn("memory: voices: syncing the directory", "err", err)
	}
	f, err := os.OpenFile(v.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("memory: voices: %w", err)
	}
	v.f = f
	return nil
}

func (v *Voices) sortedPeople() []string {
	out := make([]string, 0, len(v.people))
	for p := range v.people {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Match is the person whose voiceprint is nearest to vec, by cosine
// distance to its mean (0: the same direction, 2: opposite), among those
// of vec's dimensions; "" and -1 when there is none.
func (v *Voices) Match(vec []float32) (person string, distance float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.match(vec, "")
}

// Nearest is the nearest person other than except (the runner-up of a
// Match), or "" and -1.
func (v *Voices) Nearest(vec []float32, except string) (person string, distance float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.match(vec, except)
}

func (v *Voices) match(vec []float32, except string) (string, float64) {
	best, bestD := "", -1.0
	for _, person := range v.sortedPeople() {
		p := v.people[person]
		if person == except || len(p.mean) != len(vec) {
			continue
		}
		if d := CosineDistance(p.mean, vec); bestD < 0 || d < bestD {
			best, bestD = person, d
		}
	}
	return best, bestD
}

// List is what Voices holds, by person.
func (v *Voices) List() []VoicePerson {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := []VoicePerson{}
	for _, person := range v.sortedPeople() {
		s := v.people[person].samples
		last := s[len(s)-1]
		out = append(out, VoicePerson{Person: person, Samples: len(s), Dims: len(last.Vec), Model: last.Model, Updated: last.At})
	}
	return out
}

// Knows reports whether person has a voiceprint.
func (v *Voices) Knows(person string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.people[person] != nil
}

// Repaired is how many bad or torn lines OpenVoices dropped.
func (v *Voices) Repaired() int { return v.repaired }

// Path is the file's.
func (v *Voices) Path() string { return v.path }

// Close closes the file.
func (v *Voices) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.f == nil {
		return nil
	}
	err := v.f.Close()
	v.f = nil
	return err
}

// CosineDistance is 1 − the cosine similarity of a and b (0 to 2); 2
// when either is all zeros.
func CosineDistance[A, B ~float32 | ~float64](a []A, b []B) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 2
	}
	return max(0, min(2, 1-dot/math.Sqrt(na*nb)))
}

// meanUnit is the mean of the samples' unit vectors, itself of unit
// length (nil without samples).
func meanUnit(samples []voiceRecord) []float64 {
	if len(samples) == 0 {
		return nil
	}
	m := make([]float64, len(samples[0].Vec))
	for _, s := range samples {
		n := norm32(s.Vec)
		for i, x := range s.Vec {
			m[i] += float64(x) / n
		}
	}
	var n float64
	for _, x := range m {
		n += x * x
	}
	if n = math.Sqrt(n); n > 0 {
		for i := range m {
			m[i] /= n
		}
	}
	return m
}
