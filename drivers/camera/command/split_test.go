package command

import (
	"bytes"
	"errors"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
)

// frameJPEG is a real encoded test-pattern frame: its entropy-coded data
// has stuffed FF 00 bytes.
func frameJPEG(t testing.TB, w, h, n int) []byte {
	t.Helper()
	f, err := camera.Encode(testpattern.Image(w, h, n, time.Unix(1700000000, 0)), 80)
	if err != nil {
		t.Fatal(err)
	}
	return f.JPEG
}

// withApp inserts an APP1 segment holding payload right after the SOI.
func withApp(j, payload []byte) []byte {
	n := len(payload) + 2
	seg := append([]byte{0xFF, 0xE1, byte(n >> 8), byte(n)}, payload...)
	return append(append(append([]byte{}, j[:2]...), seg...), j[2:]...)
}

// splitAll runs Split over data as a reader would, all of it at once,
// and returns the frames and the drop reasons.
func splitAll(data []byte, limit int) (frames [][]byte, drops []error) {
	for {
		adv, f, err := Split(data, limit)
		if adv == 0 {
			return
		}
		if err != nil {
			drops = append(drops, err)
		} else {
			frames = append(frames, f)
		}
		data = data[adv:]
	}
}

func TestSplit(t *testing.T) {
	a, b := frameJPEG(t, 320, 240, 0), frameJPEG(t, 160, 120, 3)
	if !bytes.Contains(a, []byte{0xFF, 0x00}) {
		t.Fatal("test frame has no stuffed bytes; the case is not tested")
	}
	// An EXIF-like APP1 holding a whole thumbnail JPEG: its FF D9 and
	// FF D8 FF are inside a segment and must not cut the frame.
	thumb := withApp(a, b)
	big := withApp(b, make([]byte, 60000))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	restart := append(append([]byte{}, a[:len(a)-2]...), 0xFF, 0xD3, 0x12, 0xFF, 0x00, 0xFF, 0xFF, 0xD9)
	for _, c := range []struct {
		name   string
		data   []byte
		limit  int
		frames [][]byte
		drops  []error
	}{
		{"two back to back", cat(a, b), 1 << 20, [][]byte{a, b}, nil},
		{"text before", cat([]byte("rpicam-vid v1.4\n"), a), 1 << 20, [][]byte{a}, []error{ErrNotJPEG}},
		{"thumbnail in APP1", cat(thumb, b), 1 << 20, [][]byte{thumb, b}, nil},
		{"restart markers and fill bytes", restart, 1 << 20, [][]byte{restart}, nil},
		{"over the cap, then one under", cat(big, a), 50000, [][]byte{a}, []error{ErrTooBig, ErrNotJPEG}},
		{"cut off by a new frame", cat(a[:len(a)/2], b), 1 << 20, [][]byte{b}, []error{ErrMalformed}},
		{"segment with a bad length", cat([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01}, b), 1 << 20, [][]byte{b}, []error{ErrMalformed, ErrNotJPEG}},
		{"only garbage", bytes.Repeat([]byte("x"), 1000), 1 << 20, nil, []error{ErrNotJPEG}},
		{"incomplete frame waits", a[:len(a)-1], 1 << 20, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			frames, drops := splitAll(c.data, c.limit)
			if len(frames) != len(c.frames) {
				t.Fatalf("%d frames, want %d (drops %v)", len(frames), len(c.frames), drops)
			}
			for i := range frames {
				if !bytes.Equal(frames[i], c.frames[i]) {
					t.Errorf("frame %d: %d bytes, want %d", i, len(frames[i]), len(c.frames[i]))
				}
				if _, err := jpeg.DecodeConfig(bytes.NewReader(frames[i])); err != nil {
					t.Errorf("frame %d does not decode: %v", i, err)
				}
			}
			if len(drops) != len(c.drops) {
				t.Fatalf("drops %v, want %v", drops, c.drops)
			}
			for i := range drops {
				if !errors.Is(drops[i], c.drops[i]) {
					t.Errorf("drop %d: %v, want %v", i, drops[i], c.drops[i])
				}
			}
		})
	}
}

// A frame that arrives a few bytes at a time comes out whole and once.
func TestSplitByteByByte(t *testing.T) {
	a, b := frameJPEG(t, 64, 48, 1), frameJPEG(t, 64, 48, 2)
	stream := append(append([]byte("junk"), a...), b...)
	var buf []byte
	var got [][]byte
	for _, c := range stream {
		buf = append(buf, c)
		for {
			adv, f, err := Split(buf, 1<<20)
			if adv == 0 {
				break
			}
			if err == nil {
				got = append(got, bytes.Clone(f))
			}
			buf = buf[adv:]
		}
	}
	if len(got) != 2 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) {
		t.Fatalf("%d frames", len(got))
	}
}

// FuzzSplit: on any input Split makes progress, never reads past its
// input, never returns a frame over the cap or one that does not start
// with SOI and end with EOI.
func FuzzSplit(f *testing.F) {
	a := frameJPEG(f, 32, 24, 0)
	for _, s := range [][]byte{a, append([]byte("x"), a...), withApp(a, a), a[:len(a)/2], {0xFF, 0xD8, 0xFF, 0xDA, 0, 2, 0xFF}} {
		f.Add(s, uint16(4096))
	}
	// The seed corpus in testdata also holds what the fuzzer found worth
	// keeping; the reader's stream is fed in chunks as the pipe gives it.
	f.Fuzz(func(t *testing.T, data []byte, limit16 uint16) {
		limit := int(limit16) + 4
		total := 0
		for len(data) > 0 {
			adv, frame, err := Split(data, limit)
			if adv < 0 || adv > len(data) {
				t.Fatalf("advance %d of %d bytes", adv, len(data))
			}
			if adv == 0 {
				if frame != nil || err != nil {
					t.Fatalf("need more data with a frame or an error: %v", err)
				}
				if len(data) > limit+2 {
					t.Fatalf("holds %d bytes over the cap %d", len(data), limit)
				}
				break
			}
			if err == nil {
				if len(frame) != adv || len(frame) > limit || !bytes.HasPrefix(frame, []byte{0xFF, 0xD8, 0xFF}) ||
					!bytes.HasSuffix(frame, []byte{0xFF, 0xD9}) {
					t.Fatalf("bad frame of %d bytes (advance %d, cap %d)", len(frame), adv, limit)
				}
			} else if frame != nil {
				t.Fatal("a frame with an error")
			}
			total += adv
			data = data[adv:]
		}
	})
}

// The committed seed corpus is there (go test runs it).
func TestFuzzCorpusCommitted(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzSplit"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no seed corpus: %v", err)
	}
}

// Text before the stream is dropped whole, keeping only an end that may
// begin a frame (so a line of text counts once, not once per read).
func TestSplitKeepsOnlyAPossibleStart(t *testing.T) {
	for _, c := range []struct {
		data    string
		advance int
	}{
		{"starting\n", 9},
		{"ab\xff", 2},
		{"ab\xff\xd8", 2},
		{"ab\xd8", 3},
		{"\xff\xd8", 0},
		{"\xff", 0},
	} {
		adv, f, err := Split([]byte(c.data), 1<<20)
		if adv != c.advance || f != nil || (adv > 0) != (err == ErrNotJPEG) {
			t.Errorf("%q: advance %d, frame %v, %v; want advance %d", c.data, adv, f != nil, err, c.advance)
		}
	}
}
