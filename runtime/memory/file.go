package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// rewrite replaces the file with the live records of st, erasing the old
// bytes (package doc, "Erasure"): write .new with an end record and sync
// it; zero the old file in place and sync it; rename .new over it and sync
// the directory.
func (s *Store) rewrite(st *state) error {
	var buf []byte
	n := 0
	type pm struct {
		p string
		m met
	}
	var ms []pm
	for p, m := range st.met {
		ms = append(ms, pm{p, m})
	}
	slices.SortFunc(ms, func(a, b pm) int {
		if c := a.m.at.Compare(b.m.at); c != 0 {
			return c
		}
		return strings.Compare(a.p, b.p)
	})
	for _, x := range ms {
		buf = append(buf, metLine(x.p, x.m.at)...)
		n++
	}
	for _, e := range st.facts {
		buf = append(buf, factLine(e.f)...)
		n++
	}
	buf = append(buf, endLine(n)...)

	tmp := s.path + ".new"
	if err := writeSynced(tmp, buf); err != nil {
		if rerr := eraseFile(tmp); rerr != nil {
			s.log.Warn("memory: removing a failed rewrite", "file", tmp, "err", rerr)
		}
		return err
	}
	// From here .new is authoritative: Open would finish the procedure.
	if err := zeroFile(s.f); err != nil {
		s.log.Warn("memory: zeroing the old file", "file", s.path, "err", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		s.err = fmt.Errorf("memory: %s: a rewrite stopped half way; reopen the store: %w", s.path, err)
		return s.err
	}
	if err := syncDir(s.dir); err != nil {
		s.log.Warn("memory: syncing the directory", "dir", s.dir, "err", err)
	}
	old := s.f
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err == nil {
		_, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		s.err = fmt.Errorf("memory: reopening %s after a rewrite: %w", s.path, err)
		return s.err
	}
	old.Close()
	s.f = f
	s.size = int64(len(buf))
	return nil
}

// recoverNew finishes or undoes a rewrite that a crash interrupted.
func (s *Store) recoverNew() error {
	tmp := s.path + ".new"
	data, err := os.ReadFile(tmp)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if !complete(data) {
		s.log.Warn("memory: removing an incomplete rewrite", "file", tmp, "bytes", len(data))
		if err := eraseFile(tmp); err != nil {
			return err
		}
		return syncDir(s.dir)
	}
	s.log.Warn("memory: finishing an interrupted rewrite", "file", tmp)
	if f, err := os.OpenFile(s.path, os.O_RDWR, 0); err == nil {
		zerr := zeroFile(f)
		f.Close()
		if zerr != nil {
			return zerr
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("memory: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return syncDir(s.dir)
}

// complete reports whether data ends with an end record that counts the
// lines before it.
func complete(data []byte) bool {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return false
	}
	body := data[:len(data)-1]
	i := bytes.LastIndexByte(body, '\n')
	last := body[i+1:]
	w, err := decodeLine(last)
	if err != nil || w.Op != opEnd {
		return false
	}
	return *w.N == bytes.Count(body[:i+1], []byte{'\n'})
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memory: writing %s: %w", path, err)
	}
	return nil
}

// eraseFile zeroes path's bytes and removes it.
func eraseFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	zerr := zeroFile(f)
	f.Close()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("memory: %w", err)
	}
	return zerr
}

// zeroFile overwrites all of f's bytes with zeros and syncs it.
func zeroFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return zeroRange(f, 0, fi.Size())
}

// zeroRange overwrites n bytes of f from off with zeros and syncs it.
func zeroRange(f *os.File, off, n int64) error {
	zeros := make([]byte, min(n, 64<<10))
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return fmt.Errorf("memory: zeroing %s: %w", f.Name(), err)
		}
		off += k
		n -= k
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("memory: syncing %s: %w", f.Name(), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("memory: syncing directory %s: %w", dir, err)
	}
	return nil
}
