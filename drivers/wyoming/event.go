package wyoming

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Bounds on what ReadEvent accepts: a header line, its data and its
// payload (an audio chunk of one second at 48 kHz stereo s16 is 192 kB).
const (
	MaxHeader  = 16 << 10
	MaxData    = 1 << 20
	MaxPayload = 4 << 20
	maxType    = 64
)

// Version is the protocol version this package writes in headers.
const Version = "1.5.2"

// Event is one Wyoming event: a type, JSON data (the header's data with
// the data section merged over it, key by key) and an optional binary
// payload (PCM for audio-chunk).
type Event struct {
	Type    string
	Data    map[string]json.RawMessage
	Payload []byte
}

// NewEvent builds an event whose data is v marshalled (a struct or map
// that encodes as a JSON object; nil for none).
func NewEvent(typ string, v any, payload []byte) (Event, error) {
	ev := Event{Type: typ, Payload: payload}
	if v == nil {
		return ev, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Event{}, fmt.Errorf("wyoming: encode %s data: %w", typ, err)
	}
	if err := json.Unmarshal(b, &ev.Data); err != nil {
		return Event{}, fmt.Errorf("wyoming: %s data is not a JSON object: %w", typ, err)
	}
	return ev, nil
}

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	b, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("wyoming: %s data: %w", e.Type, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("wyoming: %s data: %w", e.Type, err)
	}
	return nil
}

// ErrProtocol is returned (wrapped) for bytes that are not a valid event.
var ErrProtocol = errors.New("wyoming: protocol error")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// ReadEvent reads one event. It is strict: the header is one line of at
// most MaxHeader bytes holding a JSON object with a non-empty "type"
// string, "data" an object if present, "data_length" and "payload_length"
// integers within MaxData and MaxPayload, "version" a string; the data
// section is a JSON object. Other header keys are ignored, as the
// reference implementation does. io.EOF means the peer closed between
// events; a close inside an event is io.ErrUnexpectedEOF.
func ReadEvent(r *bufio.Reader) (Event, error) {
	line, err := readLine(r)
	if err != nil {
		return Event{}, err
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(line, &h); err != nil {
		return Event{}, protoErr("header %q is not a JSON object: %v", clip(line), err)
	}
	var ev Event
	if err := json.Unmarshal(h["type"], &ev.Type); err != nil || ev.Type == "" || len(ev.Type) > maxType {
		return Event{}, protoErr("header %q: \"type\" must be a string of 1..%d bytes", clip(line), maxType)
	}
	if v, ok := h["version"]; ok && !isNull(v) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return Event{}, protoErr("%s: \"version\" is not a string", ev.Type)
		}
	}
	if v, ok := h["data"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &ev.Data); err != nil {
			return Event{}, protoErr("%s: \"data\" is not a JSON object", ev.Type)
		}
	}
	dataLen, err := length(h, "data_length", MaxData, ev.Type)
	if err != nil {
		return Event{}, err
	}
	payloadLen, err := length(h, "payload_length", MaxPayload, ev.Type)
	if err != nil {
		return Event{}, err
	}
	if dataLen > 0 {
		b := make([]byte, dataLen)
		if _, err := io.ReadFull(r, b); err != nil {
			return Event{}, fmt.Errorf("wyoming: %s: reading %d bytes of data: %w", ev.Type, dataLen, eof(err))
		}
		var more map[string]json.RawMessage
		if err := json.Unmarshal(b, &more); err != nil || more == nil {
			return Event{}, protoErr("%s: the data section is not a JSON object", ev.Type)
		}
		if ev.Data == nil {
			ev.Data = more
		} else {
			for k, v := range more {
				ev.Data[k] = v
			}
		}
	}
	if payloadLen > 0 {
		ev.Payload = make([]byte, payloadLen)
		if _, err := io.ReadFull(r, ev.Payload); err != nil {
			return Event{}, fmt.Errorf("wyoming: %s: reading %d bytes of payload: %w", ev.Type, payloadLen, eof(err))
		}
	}
	return ev, nil
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > MaxHeader {
			return nil, protoErr("header line longer than %d bytes", MaxHeader)
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("wyoming: reading a header: %w", io.ErrUnexpectedEOF)
		default:
			return nil, fmt.Errorf("wyoming: reading a header: %w", err)
		}
	}
}

func length(h map[string]json.RawMessage, key string, max int, typ string) (int, error) {
	v, ok := h[key]
	if !ok || isNull(v) {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 || n > int64(max) {
		return 0, protoErr("%s: %q is %s, want an integer 0..%d", typ, key, clip(v), max)
	}
	return int(n), nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// AppendEvent appends ev in wire form to b, as the reference
// implementation writes it: a header line with type, version and the
// lengths, then the data as its own section, then the payload.
func AppendEvent(b []byte, ev Event) ([]byte, error) {
	if ev.Type == "" || len(ev.Type) > maxType {
		return b, fmt.Errorf("wyoming: event type %q must be 1..%d bytes", ev.Type, maxType)
	}
	var data []byte
	if len(ev.Data) > 0 {
		var err error
		if data, err = json.Marshal(ev.Data); err != nil {
			return b, fmt.Errorf("wyoming: encode %s data: %w", ev.Type, err)
		}
	}
	if len(data) > MaxData || len(ev.Payload) > MaxPayload {
		return b, fmt.Errorf("wyoming: %s: data of %d bytes or payload of %d bytes over the bounds", ev.Type, len(data), len(ev.Payload))
	}
	h := struct {
		Type          string `json:"type"`
		Version       string `json:"version"`
		DataLength    int    `json:"data_length,omitempty"`
		PayloadLength int    `json:"payload_length,omitempty"`
	}{ev.Type, Version, len(data), len(ev.Payload)}
	hb, err := json.Marshal(h)
	if err != nil {
		return b, fmt.Errorf("wyoming: encode %s header: %w", ev.Type, err)
	}
	b = append(b, hb...)
	b = append(b, '\n')
	b = append(b, data...)
	return append(b, ev.Payload...), nil
}

// WriteEvent writes ev to w in one Write.
func WriteEvent(w io.Writer, ev Event) error {
	b, err := AppendEvent(nil, ev)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("wyoming: writing %s: %w", ev.Type, err)
	}
	return nil
}
