package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxWAVBytes caps what DecodeWAV accepts (10 minutes of 48 kHz mono).
const MaxWAVBytes = 60 << 20

// DecodeWAV reads a RIFF/WAVE file of 16-bit PCM (mono, or stereo mixed down
// to mono), as espeak-ng, Open JTalk, VOICEVOX and piper write them. A data
// chunk whose size is 0 or 0xFFFFFFFF (streamed output) runs to the end.
func DecodeWAV(b []byte) (PCM, error) {
	if len(b) > MaxWAVBytes {
		return PCM{}, fmt.Errorf("wav: %d bytes, cap %d", len(b), MaxWAVBytes)
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return PCM{}, errors.New("wav: not a RIFF/WAVE file")
	}
	var channels, bits uint16
	var rate uint32
	var haveFmt bool
	p := b[12:]
	for len(p) >= 8 {
		id := string(p[0:4])
		size := binary.LittleEndian.Uint32(p[4:8])
		body := p[8:]
		if id == "data" && (size == 0 || size == 0xFFFFFFFF || uint64(size) > uint64(len(body))) {
			size = uint32(len(body)) // streamed or truncated: take what is there
		}
		if uint64(size) > uint64(len(body)) {
			return PCM{}, fmt.Errorf("wav: chunk %q of %d bytes runs past the end", id, size)
		}
		chunk := body[:size]
		switch id {
		case "fmt ":
			if len(chunk) < 16 {
				return PCM{}, errors.New("wav: fmt chunk too short")
			}
			if format := binary.LittleEndian.Uint16(chunk[0:2]); format != 1 && format != 0xFFFE {
				return PCM{}, fmt.Errorf("wav: format %d is not PCM", format)
			}
			channels = binary.LittleEndian.Uint16(chunk[2:4])
			rate = binary.LittleEndian.Uint32(chunk[4:8])
			bits = binary.LittleEndian.Uint16(chunk[14:16])
			if bits != 16 || channels < 1 || channels > 2 || rate < 1000 || rate > 384000 {
				return PCM{}, fmt.Errorf("wav: need 16-bit mono or stereo at 1-384 kHz, got %d-bit, %d channels, %d Hz", bits, channels, rate)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return PCM{}, errors.New("wav: data before fmt")
			}
			frame := int(channels) * 2
			n := len(chunk) / frame
			out := make([]int16, n)
			for i := range n {
				if channels == 1 {
					out[i] = int16(binary.LittleEndian.Uint16(chunk[i*2:]))
				} else {
					l := int32(int16(binary.LittleEndian.Uint16(chunk[i*4:])))
					r := int32(int16(binary.LittleEndian.Uint16(chunk[i*4+2:])))
					out[i] = int16((l + r) / 2)
				}
			}
			return PCM{Rate: int(rate), Samples: out}, nil
		}
		adv := 8 + int(size)
		if size%2 == 1 && adv < len(p) {
			adv++ // chunks are word aligned
		}
		p = p[adv:]
	}
	return PCM{}, errors.New("wav: no data chunk")
}

// WriteWAVHeader writes a 44-byte header for n mono 16-bit samples at rate.
func WriteWAVHeader(w io.Writer, rate, n int) error {
	var h [44]byte
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+n*2))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1)
	binary.LittleEndian.PutUint16(h[22:], 1)
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*2))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(n*2))
	_, err := w.Write(h[:])
	return err
}

// EncodeWAV returns p as a mono 16-bit WAV file.
func EncodeWAV(p PCM) []byte {
	out := make([]byte, 44+len(p.Samples)*2)
	w := &sliceWriter{b: out[:0]}
	WriteWAVHeader(w, p.Rate, len(p.Samples))
	for i, s := range p.Samples {
		binary.LittleEndian.PutUint16(out[44+i*2:], uint16(s))
	}
	return out
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
