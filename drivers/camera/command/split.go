package command

import (
	"bytes"
	"errors"
)

// What Split drops, besides whole frames. Each is a recovery, not a stop:
// the stream goes on at the next start of an image.
var (
	// ErrNotJPEG: bytes before the next start of an image (a program that
	// prints text to stdout, a stream joined mid-frame).
	ErrNotJPEG = errors.New("bytes that are not a JPEG")
	// ErrMalformed: an image whose segments do not parse (a bad length, a
	// second start of image inside it).
	ErrMalformed = errors.New("malformed JPEG")
	// ErrTooBig: an image longer than the cap.
	ErrTooBig = errors.New("JPEG larger than the cap")
)

// JPEG markers (ITU T.81, B.1.1.3 and table B.1).
const (
	markSOI = 0xD8
	markEOI = 0xD9
	markSOS = 0xDA
	markTEM = 0x01
	markRST = 0xD0 // RST0..RST7 are 0xD0..0xD7
)

func standalone(m byte) bool { return m == markTEM || (m >= markRST && m <= markRST+7) }

// Split finds the first whole JPEG in data, an MJPEG stream (JPEGs back to
// back), and says how much of data it used. It is a pure function:
//
//   - a frame: frame is data[start:advance], from its SOI to its EOI;
//     err is nil.
//   - bytes to drop: frame is nil, advance > 0 and err says why
//     (ErrNotJPEG, ErrMalformed, ErrTooBig). The caller drops
//     data[:advance] and calls again.
//   - more data needed: advance is 0, frame and err nil.
//
// A frame starts at SOI followed by a marker (FF D8 FF) and is walked
// segment by segment, so an FF D9 inside a segment (an EXIF thumbnail, an
// ICC profile) does not end it. Entropy-coded data after SOS ends at the
// first FF that is neither a stuffed FF 00 nor a restart marker; more
// scans may follow (progressive JPEG). A frame longer than limit bytes, or
// still incomplete after limit bytes, is dropped (ErrTooBig), so the caller
// never holds more than limit bytes of one frame.
func Split(data []byte, limit int) (advance int, frame []byte, err error) {
	start := findSOI(data)
	if start < 0 {
		// Keep only an end that may begin FF D8 FF.
		keep := 0
		switch n := len(data); {
		case n >= 2 && data[n-2] == 0xFF && data[n-1] == markSOI:
			keep = 2
		case n >= 1 && data[n-1] == 0xFF:
			keep = 1
		}
		if n := len(data) - keep; n > 0 {
			return n, nil, ErrNotJPEG
		}
		return 0, nil, nil
	}
	if start > 0 {
		return start, nil, ErrNotJPEG
	}
	end, err := walk(data, limit)
	switch {
	case err == ErrTooBig:
		// Drop what was read of it; the rest arrives as bytes before the
		// next SOI.
		return max(2, min(len(data), end)), nil, ErrTooBig
	case err != nil:
		return max(2, end), nil, err // past this SOI, resync at the next
	case end == 0:
		if len(data) > limit {
			return len(data), nil, ErrTooBig
		}
		return 0, nil, nil
	}
	return end, data[:end], nil
}

// findSOI returns the index of the first FF D8 FF, or -1.
func findSOI(data []byte) int {
	for i := 0; i+2 < len(data); i++ {
		if data[i] == 0xFF && data[i+1] == markSOI && data[i+2] == 0xFF {
			return i
		}
	}
	return -1
}

// walk parses the frame that starts at data[0] (an SOI). It returns the
// end of the frame, or 0 when data ends first; on ErrMalformed the
// position where parsing failed, on ErrTooBig how far it got.
func walk(data []byte, limit int) (int, error) {
	p := 2
	for {
		if p > limit {
			return p, ErrTooBig
		}
		if p >= len(data) {
			return 0, nil
		}
		if data[p] != 0xFF {
			return p, ErrMalformed
		}
		// Fill bytes: any number of FF before a marker (B.1.1.2).
		for p+1 < len(data) && data[p+1] == 0xFF {
			p++
		}
		if p+1 >= len(data) {
			return 0, nil
		}
		m := data[p+1]
		switch {
		case m == markEOI:
			if p+2 > limit {
				return p + 2, ErrTooBig
			}
			return p + 2, nil
		case m == markSOI || m == 0x00:
			return p, ErrMalformed
		case standalone(m):
			p += 2
			continue
		}
		if p+3 >= len(data) {
			return 0, nil
		}
		n := int(data[p+2])<<8 | int(data[p+3])
		if n < 2 {
			return p, ErrMalformed
		}
		p += 2 + n
		if m != markSOS {
			continue
		}
		// Entropy-coded data: up to the next marker that is not a
		// stuffed byte (FF 00) or a restart (FF D0..D7).
		for {
			if p > limit {
				return p, ErrTooBig
			}
			if p+1 >= len(data) {
				return 0, nil
			}
			if data[p] != 0xFF {
				i := bytes.IndexByte(data[p:], 0xFF)
				if i < 0 {
					if len(data) > limit {
						return len(data), ErrTooBig
					}
					return 0, nil
				}
				p += i
				continue
			}
			next := data[p+1]
			if next == 0x00 || (next >= markRST && next <= markRST+7) {
				p += 2
				continue
			}
			if next == 0xFF { // fill byte before a marker
				p++
				continue
			}
			break
		}
	}
}
