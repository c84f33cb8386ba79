package air

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The roles a client says it has in its hello.
const (
	RoleSpeaker = "speaker" // a robot's speaker: plays into the air
	RoleMic     = "mic"     // a robot's microphone: hears the mix
	RolePerson  = "person"  // a simulated person: heard by every mic at gain 1
)

// Frame types.
const (
	// FramePCM is s16le mono PCM at the air's rate: a source's audio
	// (client → server) or 20 ms of the mix (server → mic).
	FramePCM = 'P'
	// FrameFlush drops what a source has queued (an aborted utterance);
	// no payload.
	FrameFlush = 'F'
	// FrameDone is an 8-byte little-endian count of a source's samples
	// done so far: played, or dropped by a flush (server → source).
	FrameDone = 'D'
	// FrameError is a UTF-8 reason the server closes the connection
	// (server → client), at most MaxErrorLen bytes.
	FrameError = 'E'
)

// Bounds of the wire.
const (
	// MaxHelloLen bounds the hello and reply lines, newline included.
	MaxHelloLen = 256
	// MaxErrorLen bounds an error frame's payload.
	MaxErrorLen = 1024
	headerLen   = 5
)

// Hello is the first line a client sends: who it is.
type Hello struct {
	Role string `json:"role"`
	ID   string `json:"id"`
	Rate int    `json:"rate"`
}

// Reply is the server's answer to a hello: the air's rate, or why the
// client is refused (then the server closes).
type Reply struct {
	Rate  int    `json:"rate,omitempty"`
	Error string `json:"error,omitempty"`
}

// Frame is one framed message after the hello.
type Frame struct {
	Type    byte
	Payload []byte
}

// MaxPayload is the largest PCM payload at rate: one second of audio.
func MaxPayload(rate int) int { return 2 * rate }

// decodeLine decodes one JSON line (without its newline) into v strictly:
// unknown fields, trailing data and over-long lines are errors.
func decodeLine(line []byte, v any) error {
	if len(line) >= MaxHelloLen {
		return fmt.Errorf("line of %d bytes, more than %d", len(line), MaxHelloLen-1)
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// DecodeHello decodes a hello line (without its newline) strictly and
// checks it against the air's rate: a known role, an id valid by valid
// (the room's identity rule; nil: any non-empty id), the air's rate.
func DecodeHello(line []byte, rate int, valid func(string) string) (Hello, error) {
	var h Hello
	if err := decodeLine(line, &h); err != nil {
		return Hello{}, fmt.Errorf("hello: %w", err)
	}
	switch h.Role {
	case RoleSpeaker, RoleMic, RolePerson:
	default:
		return Hello{}, fmt.Errorf("hello: role must be speaker, mic or person, got %q", h.Role)
	}
	why := ""
	switch {
	case h.ID == "":
		why = "must not be empty"
	case valid != nil:
		why = valid(h.ID)
	}
	if why != "" {
		return Hello{}, fmt.Errorf("hello: id %s (got %q)", why, h.ID)
	}
	if h.Rate != rate {
		return Hello{}, fmt.Errorf("hello: rate must be the air's %d Hz, got %d", rate, h.Rate)
	}
	return h, nil
}

// DecodeReply decodes the server's reply line strictly.
func DecodeReply(line []byte) (Reply, error) {
	var r Reply
	if err := decodeLine(line, &r); err != nil {
		return Reply{}, fmt.Errorf("reply: %w", err)
	}
	if (r.Error == "") == (r.Rate <= 0) {
		return Reply{}, errors.New("reply: want a positive rate or an error")
	}
	return r, nil
}

// encodeLine is v as one JSON line.
func encodeLine(v any) []byte {
	b, _ := json.Marshal(v) // plain structs of strings and ints
	return append(b, '\n')
}

// readLine reads one line of at most MaxHelloLen bytes, newline
// included, and returns it without the newline.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for len(line) < MaxHelloLen {
		c, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if c == '\n' {
			return line, nil
		}
		line = append(line, c)
	}
	return nil, fmt.Errorf("line longer than %d bytes", MaxHelloLen)
}

// Errors of ReadFrame: ErrBadFrame for any frame that breaks the
// protocol, and ErrTooLarge too for one over the bound.
var (
	ErrBadFrame = errors.New("bad frame")
	ErrTooLarge = errors.New("frame too large")
)

// ReadFrame reads one frame whose PCM payload is at most maxPCM bytes and
// checks its shape strictly: a known type, PCM of whole samples, no
// payload for flush, 8 bytes for done, a bounded error.
func ReadFrame(r io.Reader, maxPCM int) (Frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Frame{}, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if err := checkFrame(h[0], n, maxPCM); err != nil {
		return Frame{}, err
	}
	f := Frame{Type: h[0], Payload: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("frame %q: %w", h[0], err)
	}
	return f, nil
}

func checkFrame(typ byte, n uint32, maxPCM int) error {
	switch typ {
	case FramePCM:
		if int64(n) > int64(maxPCM) {
			return fmt.Errorf("%w: %w: %q of %d bytes, more than %d", ErrBadFrame, ErrTooLarge, typ, n, maxPCM)
		}
		if n%2 != 0 {
			return fmt.Errorf("%w: %q of %d bytes: not whole 16-bit samples", ErrBadFrame, typ, n)
		}
	case FrameFlush:
		if n != 0 {
			return fmt.Errorf("%w: %q with %d bytes of payload, want none", ErrBadFrame, typ, n)
		}
	case FrameDone:
		if n != 8 {
			return fmt.Errorf("%w: %q with %d bytes of payload, want 8", ErrBadFrame, typ, n)
		}
	case FrameError:
		if n > MaxErrorLen {
			return fmt.Errorf("%w: %w: %q of %d bytes, more than %d", ErrBadFrame, ErrTooLarge, typ, n, MaxErrorLen)
		}
	default:
		return fmt.Errorf("%w: unknown type %q", ErrBadFrame, typ)
	}
	return nil
}

// AppendFrame appends the encoding of a frame to b.
func AppendFrame(b []byte, typ byte, payload []byte) []byte {
	b = append(b, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// AppendPCM appends a PCM frame of samples to b.
func AppendPCM(b []byte, samples []int16) []byte {
	b = append(b, FramePCM)
	b = binary.LittleEndian.AppendUint32(b, uint32(2*len(samples)))
	for _, x := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(x))
	}
	return b
}

// AppendDone appends a done frame counting n samples to b.
func AppendDone(b []byte, n uint64) []byte {
	return AppendFrame(b, FrameDone, binary.LittleEndian.AppendUint64(nil, n))
}

// Samples decodes a PCM payload.
func Samples(payload []byte) []int16 {
	out := make([]int16, len(payload)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(payload[2*i:]))
	}
	return out
}

// Done decodes a done payload.
func Done(payload []byte) uint64 { return binary.LittleEndian.Uint64(payload) }
