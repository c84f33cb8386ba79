package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
)

// Heard is one thing a person said that waits in the journal until facts
// are extracted from it.
type Heard struct {
	Person    string `json:"person"`
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

// Bounds of a journal: what is heard beyond them pushes out the oldest.
const (
	PendingLines = 256     // things said waiting to be extracted
	PendingBytes = 1 << 20 // bytes of the journal file (a message is at most 64 KiB)
)

// Journal keeps what people said since the last extraction, so that a
// kill -9 or a power cut does not lose it (package doc, "Journal"): one
// JSON line per thing said, in <dir>/<companion>.pending, each append
// fsynced. A line that is taken out (extracted, forgotten, pushed out by
// the bounds) has its bytes zeroed in place; the file is truncated when
// nothing is left, and compacted when the zeros would push it over
// PendingBytes or outweigh the live lines. A Store opens its journal
// (Store.Journal). Safe for concurrent use; every method writes and syncs
// on the caller's goroutine.
type Journal struct {
	path, dir string
	log       *slog.Logger
	maxLines  int
	maxBytes  int64

	mu     sync.Mutex
	f      *os.File // nil when closed
	size   int64
	lines  []jline  // live, oldest first
	erased []string // message ids forgotten (Forget, Clear), the newest PendingLines
}

type jline struct {
	h      Heard
	off, n int64
}

// openJournal opens (creating, 0600) the journal at path in dir and reads
// what it holds: a torn last line is zeroed and cut off, a bad line
// zeroed, each logged; an interrupted compaction is finished.
func openJournal(dir, path string, log *slog.Logger) (*Journal, error) {
	j := &Journal{path: path, dir: dir, log: log, maxLines: PendingLines, maxBytes: PendingBytes}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memory: journal: %w", err)
	}
	j.f = f
	if err := j.load(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// load reads the file (and a compaction's .new, if a crash left one).
func (j *Journal) load() error {
	data, err := os.ReadFile(j.path)
	if err != nil {
		return fmt.Errorf("memory: journal: %w", err)
	}
	j.size = int64(len(data))
	var bad [][2]int64 // byte ranges to zero
	j.lines, bad = j.parse(data)
	tmp := j.path + ".new"
	if more, err := os.ReadFile(tmp); err == nil {
		// A compaction stopped half way. Its .new holds the live lines of
		// the file, complete once the file's zeroing began: what is live
		// is what either of them holds.
		j.log.Warn("memory: finishing an interrupted compaction of the journal", "file", tmp)
		newer, _ := j.parse(more)
		all := make([]Heard, 0, len(newer)+len(j.lines))
		for _, l := range append(newer, j.lines...) {
			if !slices.ContainsFunc(all, func(h Heard) bool { return h.MessageID == l.h.MessageID }) {
				all = append(all, l.h)
			}
		}
		if err := j.compact(all); err != nil {
			return err
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("memory: journal: %w", err)
	}
	for _, r := range bad {
		if err := zeroRange(j.f, r[0], r[1]-r[0]); err != nil {
			return err
		}
	}
	if len(j.lines) == 0 && j.size > 0 {
		return j.truncate()
	}
	if len(j.lines) > 0 {
		l := j.lines[len(j.lines)-1]
		if last := l.off + l.n; last < j.size { // a torn or bad tail, zeroed: cut it off
			if err := j.f.Truncate(last); err != nil {
				return fmt.Errorf("memory: journal: truncating %s: %w", j.path, err)
			}
			j.size = last
			if err := j.f.Sync(); err != nil {
				return fmt.Errorf("memory: journal: syncing %s: %w", j.path, err)
			}
		}
	}
	return nil
}

// parse is the live lines of data and the byte ranges of its bad ones. A
// run of zero bytes is a line taken out; a line that does not decode (a
// torn last line, a line half zeroed) is skipped with a warning.
func (j *Journal) parse(data []byte) (lines []jline, bad [][2]int64) {
	for off := 0; off < len(data); {
		end := len(data)
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end = off + nl + 1
		}
		seg := data[off:end]
		start := off
		off = end
		// A line never holds a zero byte (JSON escapes it): zeros are a
		// line taken out, and what comes before them in a segment is what
		// is left of one half taken out.
		if k := bytes.LastIndexByte(seg, 0); k >= 0 {
			if len(bytes.Trim(seg[:k+1], "\x00")) > 0 {
				j.log.Warn("memory: skipping what is left of a line half erased in the journal", "file", j.path, "offset", start)
				bad = append(bad, [2]int64{int64(start), int64(start + k + 1)})
			}
			start += k + 1
			seg = seg[k+1:]
		}
		text := seg
		if len(text) == 0 {
			continue // erased
		}
		if text[len(text)-1] != '\n' {
			j.log.Warn("memory: skipping a torn last line of the journal", "file", j.path, "offset", start, "bytes", len(seg))
			bad = append(bad, [2]int64{int64(start), int64(end)})
			continue
		}
		var h Heard
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		err := dec.Decode(&h)
		if err == nil && dec.InputOffset() != int64(len(bytes.TrimRight(text, " \t\r\n"))) {
			err = errors.New("more after the record")
		}
		if err == nil {
			err = checkHeard(h)
		}
		if err != nil {
			j.log.Warn("memory: skipping a bad line of the journal", "file", j.path, "offset", start, "err", err)
			bad = append(bad, [2]int64{int64(start), int64(end)})
			continue
		}
		lines = append(lines, jline{h: h, off: int64(start), n: int64(end - start)})
	}
	return lines, bad
}

func checkHeard(h Heard) error {
	if err := checkPerson(h.Person); err != nil {
		return err
	}
	if h.MessageID == "" {
		return errors.New("no message id")
	}
	return nil
}

// Pending is what the journal holds, oldest first.
func (j *Journal) Pending() []Heard {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.heard()
}

// Append writes h as one line and syncs it. Beyond PendingLines, or
// PendingBytes, the oldest lines are taken out first (their bytes
// zeroed). A failed append is cut back off the file.
func (j *Journal) Append(h Heard) error {
	if err := checkHeard(h); err != nil {
		return fmt.Errorf("memory: journal: %w", err)
	}
	line, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("memory: journal: %w", err)
	}
	line = append(line, '\n')
	n := int64(len(line))
	if n > j.maxBytes {
		return fmt.Errorf("memory: journal: a line of %d bytes (at most %d)", n, j.maxBytes)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return ErrClosed
	}
	var drop int
	for live := j.live(); len(j.lines)-drop > 0 && (len(j.lines)-drop >= j.maxLines || live+n > j.maxBytes); drop++ {
		live -= j.lines[drop].n
	}
	if drop > 0 {
		j.log.Warn("memory: the journal is full; the oldest things said are dropped unextracted", "file", j.path, "lines", drop)
		if err := j.erase(func(i int, _ jline) bool { return i < drop }); err != nil {
			return err
		}
	}
	// Compact when the zeros would push the file over its bound, or
	// outweigh the live lines (so a compaction, on the caller's
	// goroutine, writes little).
	if live, dead := j.live(), j.size-j.live(); j.size+n > j.maxBytes || dead > compactSlack && dead > live {
		if err := j.compact(j.heard()); err != nil {
			return err
		}
	}
	if _, err := j.f.WriteAt(line, j.size); err != nil {
		j.cutBack()
		return fmt.Errorf("memory: journal: appending to %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		j.cutBack()
		return fmt.Errorf("memory: journal: syncing %s: %w", j.path, err)
	}
	j.lines = append(j.lines, jline{h: h, off: j.size, n: n})
	j.size += n
	return nil
}

// cutBack cuts what a failed append may have written.
func (j *Journal) cutBack() {
	if err := j.f.Truncate(j.size); err != nil {
		j.log.Warn("memory: journal: cutting back a failed append", "file", j.path, "err", err)
	}
}

// Remove takes out the lines of the messages ids (extracted, or "forget
// that").
func (j *Journal) Remove(ids ...string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.erase(func(_ int, l jline) bool { return slices.Contains(ids, l.h.MessageID) })
}

// Forget takes out every line of person; Erased reports them.
func (j *Journal) Forget(person string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.forget(func(l jline) bool { return l.h.Person == person })
}

// Clear takes out every line; Erased reports them.
func (j *Journal) Clear() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.forget(func(jline) bool { return true })
}

// forget erases the lines that match and remembers their ids. j.mu is
// held.
func (j *Journal) forget(match func(jline) bool) error {
	var ids []string
	for _, l := range j.lines {
		if match(l) {
			ids = append(ids, l.h.MessageID)
		}
	}
	if err := j.erase(func(_ int, l jline) bool { return match(l) }); err != nil {
		return err
	}
	j.erased = append(j.erased, ids...)
	if over := len(j.erased) - j.maxLines; over > 0 {
		j.erased = slices.Delete(j.erased, 0, over)
	}
	return nil
}

// Erased reports whether the line of message id was forgotten (Forget,
// Clear: "forget me", an operator's forget, a wipe): whoever still holds
// what was said in it must not extract it.
func (j *Journal) Erased(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Contains(j.erased, id)
}

// erase zeroes the lines that match and syncs; with nothing left, the
// file is truncated. j.mu is held.
func (j *Journal) erase(match func(int, jline) bool) error {
	if j.f == nil {
		return ErrClosed
	}
	var keep []jline
	zeroed := false
	for i, l := range j.lines {
		if !match(i, l) {
			keep = append(keep, l)
			continue
		}
		zeros := make([]byte, l.n)
		if _, err := j.f.WriteAt(zeros, l.off); err != nil {
			return fmt.Errorf("memory: journal: zeroing %s: %w", j.path, err)
		}
		zeroed = true
	}
	if !zeroed {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("memory: journal: syncing %s: %w", j.path, err)
	}
	j.lines = keep
	if len(keep) == 0 {
		return j.truncate()
	}
	return nil
}

// truncate empties the file (its bytes are zeros already). j.mu is held.
func (j *Journal) truncate() error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("memory: journal: truncating %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("memory: journal: syncing %s: %w", j.path, err)
	}
	j.size = 0
	return nil
}

// compact replaces the file by hs, erasing the old bytes as the store's
// rewrite does: write .new and sync it; zero the old file and sync it;
// rename .new over it and sync the directory. j.mu is held (or j is not
// shared yet).
func (j *Journal) compact(hs []Heard) error {
	var buf []byte
	lines := make([]jline, 0, len(hs))
	for _, h := range hs {
		b, err := json.Marshal(h)
		if err != nil {
			return fmt.Errorf("memory: journal: %w", err)
		}
		lines = append(lines, jline{h: h, off: int64(len(buf)), n: int64(len(b) + 1)})
		buf = append(append(buf, b...), '\n')
	}
	tmp := j.path + ".new"
	if err := writeSynced(tmp, buf); err != nil {
		return err
	}
	if err := zeroFile(j.f); err != nil {
		return err
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("memory: journal: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		j.log.Warn("memory: journal: syncing the directory", "dir", j.dir, "err", err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("memory: journal: reopening %s: %w", j.path, err)
	}
	j.f.Close()
	j.f, j.lines, j.size = f, lines, int64(len(buf))
	return nil
}

func (j *Journal) live() int64 {
	var n int64
	for _, l := range j.lines {
		n += l.n
	}
	return n
}

func (j *Journal) heard() []Heard {
	out := make([]Heard, 0, len(j.lines))
	for _, l := range j.lines {
		out = append(out, l.h)
	}
	return out
}

// Close closes the file. It is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if err != nil {
		return fmt.Errorf("memory: journal: closing %s: %w", j.path, err)
	}
	return nil
}
