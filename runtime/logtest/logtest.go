// Package logtest is what tests read logs with: a buffer that a logger,
// a process's two output streams and the test may write and read from
// several goroutines at once.
package logtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex; the zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// RepeatedKeys returns the keys a log line of slog's JSON handler names
// more than once at its top level (a logger's With and a call's own
// attributes both giving "device", say): a line says each key once.
func RepeatedKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %q", line)
	}
	seen, out := map[string]bool{}, []string(nil)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if seen[k] {
			out = append(out, k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return out, nil
}
