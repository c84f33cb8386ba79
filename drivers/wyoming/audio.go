package wyoming

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Audio is the data of audio-start and audio-chunk: the PCM's format.
type Audio struct {
	Rate     int `json:"rate"`
	Width    int `json:"width"`
	Channels int `json:"channels"`
}

// Mono16 is 16-bit mono PCM at rate, the one format Chorus sends.
func Mono16(rate int) Audio { return Audio{Rate: rate, Width: 2, Channels: 1} }

// DefaultDialTimeout is how long a connection to a Wyoming server may
// take (speech to text and wake words alike).
const DefaultDialTimeout = 3 * time.Second

// Dial connects to a server at addr (host:port) within timeout (0:
// DefaultDialTimeout) or ctx; its errors begin with who ("stt wyoming").
func Dial(ctx context.Context, who, addr string, timeout time.Duration) (net.Conn, error) {
	if addr == "" {
		return nil, fmt.Errorf("%s: no server address", who)
	}
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: connect to %s: %w", who, addr, err)
	}
	return c, nil
}

// Begin is the bytes that open an audio stream, for one write: the event
// typ with data v (transcribe, detect), then audio-start in format f.
func Begin(typ string, v any, f Audio) ([]byte, error) {
	var b []byte
	for _, ev := range []struct {
		typ string
		v   any
	}{{typ, v}, {"audio-start", f}} {
		e, err := NewEvent(ev.typ, ev.v, nil)
		if err == nil {
			b, err = AppendEvent(b, e)
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Start opens an audio stream on conn: it writes Begin(typ, v, f) within
// timeout. On failure it closes conn.
func Start(conn net.Conn, typ string, v any, f Audio, timeout time.Duration) error {
	b, err := Begin(typ, v, f)
	if err == nil {
		conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err = conn.Write(b); err != nil {
			err = fmt.Errorf("sending %s: %w", typ, err)
		}
	}
	if err != nil {
		conn.Close()
	}
	return err
}

// WriteChunk writes payload (little-endian PCM in format f) to conn as one
// audio-chunk, within timeout.
func WriteChunk(conn net.Conn, f Audio, payload []byte, timeout time.Duration) error {
	e, err := NewEvent("audio-chunk", f, payload)
	if err != nil {
		return err
	}
	conn.SetWriteDeadline(time.Now().Add(timeout))
	return WriteEvent(conn, e)
}
