package air

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestDecodeHello(t *testing.T) {
	for _, tc := range []struct {
		line, err string
	}{
		{`{"role":"speaker","id":"kyoko","rate":16000}`, ""},
		{`{"role":"mic","id":"hana","rate":16000}`, ""},
		{`{"role":"person","id":"user","rate":16000}`, ""},
		{`{"role":"robot","id":"kyoko","rate":16000}`, "role must be speaker, mic or person"},
		{`{"role":"mic","id":"","rate":16000}`, "id must not be empty"},
		{`{"role":"mic","id":"a/b","rate":16000}`, "id must not contain"},
		{`{"role":"mic","id":"kyoko","rate":48000}`, "rate must be the air's 16000 Hz, got 48000"},
		{`{"role":"mic","id":"kyoko","rate":16000,"gain":2}`, "unknown field"},
		{`{"role":"mic","id":"kyoko","rate":16000} {}`, "trailing data"},
		{`not json`, "invalid character"},
		{`{"role":"mic","id":"` + strings.Repeat("k", 300) + `","rate":16000}`, "more than"},
	} {
		_, err := DecodeHello([]byte(tc.line), 16000, protocol.ValidIdentity)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.line, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want an error containing %q", tc.line, err, tc.err)
		}
	}
}

func TestReadFrame(t *testing.T) {
	frame := func(typ byte, n int) []byte { return AppendFrame(nil, typ, make([]byte, n)) }
	for _, tc := range []struct {
		name  string
		in    []byte
		err   error
		large bool
	}{
		{"pcm", AppendPCM(nil, []int16{1, -2, 3}), nil, false},
		{"pcm at the bound", frame('P', 32000), nil, false},
		{"pcm over the bound", frame('P', 32002), ErrBadFrame, true},
		{"odd pcm", frame('P', 3), ErrBadFrame, false},
		{"flush", frame('F', 0), nil, false},
		{"flush with payload", frame('F', 1), ErrBadFrame, false},
		{"done", AppendDone(nil, 42), nil, false},
		{"short done", frame('D', 4), ErrBadFrame, false},
		{"error", AppendFrame(nil, 'E', []byte("no")), nil, false},
		{"long error", frame('E', MaxErrorLen+1), ErrBadFrame, true},
		{"unknown", frame('X', 0), ErrBadFrame, false},
		{"cut payload", frame('P', 4)[:7], nil, false},
	} {
		f, err := ReadFrame(bytes.NewReader(tc.in), 32000)
		if tc.name == "cut payload" {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if !errors.Is(err, tc.err) || errors.Is(err, ErrTooLarge) != tc.large {
			t.Errorf("%s: got %v, want %v (too large %v)", tc.name, err, tc.err, tc.large)
		}
		if err == nil && !bytes.Equal(AppendFrame(nil, f.Type, f.Payload), tc.in) {
			t.Errorf("%s: does not round-trip", tc.name)
		}
	}
	if got := Samples(AppendPCM(nil, []int16{1, -2, 32767})[headerLen:]); got[1] != -2 || got[2] != 32767 {
		t.Errorf("samples: %v", got)
	}
}

func FuzzDecodeHello(f *testing.F) {
	f.Add([]byte(`{"role":"speaker","id":"kyoko","rate":16000}`))
	f.Add([]byte(`{"role":"mic","id":"a b","rate":1}`))
	f.Add([]byte(`{"rate":16000}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHello(b, 16000, protocol.ValidIdentity)
		if err != nil {
			return
		}
		// What it accepts, it reads again the same.
		if h2, err := DecodeHello(bytes.TrimSuffix(encodeLine(h), []byte("\n")), 16000, protocol.ValidIdentity); err != nil || h2 != h {
			t.Fatalf("%q: re-encoded as %+v, %v", b, h2, err)
		}
	})
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendPCM(nil, []int16{1, 2, 3}))
	f.Add(AppendDone(nil, 7))
	f.Add(AppendFrame(nil, 'F', nil))
	f.Add(AppendFrame(nil, 'E', []byte("bye")))
	f.Add([]byte{'P', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			fr, err := ReadFrame(r, 320)
			if err != nil {
				return
			}
			if fr.Type == FramePCM && (len(fr.Payload) > 320 || len(fr.Payload)%2 != 0) {
				t.Fatalf("accepted PCM of %d bytes", len(fr.Payload))
			}
			if err := checkFrame(fr.Type, uint32(len(fr.Payload)), 320); err != nil {
				t.Fatalf("accepted a frame it refuses: %v", err)
			}
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	f.Add([]byte(`{"rate":16000}`))
	f.Add([]byte(`{"error":"no"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReply(b)
		if err == nil && (r.Error == "") == (r.Rate <= 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}
