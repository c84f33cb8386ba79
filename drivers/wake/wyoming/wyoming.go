// Package wyoming listens for wake words with a Wyoming wake-word server
// (wyoming-openwakeword, what Home Assistant users run): one connection
// per Listener, kept open; the client sends detect {names}, audio-start
// {rate, width, channels} and audio-chunk events for as long as it
// listens; the server answers detection {name, timestamp} whenever it
// hears one (and not-detected after an audio-stop, which a listener that
// never stops does not send). Every event goes through drivers/wyoming's
// strict reader and writer.
//
// # Concurrency
//
// Each Listener owns two goroutines, a writer draining its bounded queue
// of chunks and a reader of the server's events; both end at Close or
// when the connection fails.
package wyoming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/wake"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// Defaults.
const (
	DefaultDialTimeout = 3 * time.Second
	DefaultMaxQueue    = 50 // chunks (a second of 20 ms frames)
	writeTimeout       = 5 * time.Second
	maxDetections      = 16
)

// Detector is a Wyoming wake-word server.
type Detector struct {
	Addr        string   // host:port (wyoming-openwakeword listens on 10400)
	Names       []string // the wake words to detect; none: the server's
	DialTimeout time.Duration
	MaxQueue    int
	Log         *slog.Logger
}

var _ wake.Detector = (*Detector)(nil)

// Name implements wake.Detector.
func (d *Detector) Name() string { return "wyoming" }

type format struct {
	Rate     int `json:"rate"`
	Width    int `json:"width"`
	Channels int `json:"channels"`
}

// Listen implements wake.Detector.
func (d *Detector) Listen(ctx context.Context, rate int) (wake.Listener, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, fmt.Errorf("wake wyoming: %w", err)
	}
	if d.Addr == "" {
		return nil, errors.New("wake wyoming: no server address")
	}
	timeout := d.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", d.Addr)
	if err != nil {
		return nil, fmt.Errorf("wake wyoming: %s: %w", d.Addr, err)
	}
	f := format{Rate: rate, Width: 2, Channels: 1}
	var b []byte
	for _, ev := range []struct {
		typ string
		v   any
	}{{"detect", map[string]any{"names": d.Names}}, {"audio-start", f}} {
		e, err := wy.NewEvent(ev.typ, ev.v, nil)
		if err == nil {
			b, err = wy.AppendEvent(b, e)
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("wake wyoming: %w", err)
		}
	}
	conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := conn.Write(b); err != nil {
		conn.Close()
		return nil, fmt.Errorf("wake wyoming: %s: %w", d.Addr, err)
	}
	n := d.MaxQueue
	if n <= 0 {
		n = DefaultMaxQueue
	}
	l := &Listener{d: d, conn: conn, format: f, queue: make(chan []int16, n), det: make(chan wake.Detection, maxDetections),
		stop: make(chan struct{})}
	l.wg.Add(2)
	go l.write()
	go l.read()
	return l, nil
}

// Listener is one open stream.
type Listener struct {
	d      *Detector
	conn   net.Conn
	format format
	queue  chan []int16
	det    chan wake.Detection
	stop   chan struct{}
	wg     sync.WaitGroup

	once    sync.Once
	mu      sync.Mutex
	err     error
	dropped int
}

var _ wake.Listener = (*Listener)(nil)

func (l *Listener) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.shut()
}

func (l *Listener) shut() {
	l.once.Do(func() {
		close(l.stop)
		l.conn.Close()
	})
}

// Err implements wake.Listener.
func (l *Listener) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Write implements wake.Listener.
func (l *Listener) Write(pcm []int16) error {
	select {
	case <-l.stop:
		if err := l.Err(); err != nil {
			return err
		}
		return errors.New("wake wyoming: listener closed")
	default:
	}
	select {
	case l.queue <- append([]int16(nil), pcm...):
	default:
		l.mu.Lock()
		l.dropped++
		l.mu.Unlock()
	}
	return nil
}

func (l *Listener) write() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case pcm := <-l.queue:
			e, err := wy.NewEvent("audio-chunk", l.format, stt.AppendLE16(nil, pcm))
			if err == nil {
				l.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
				err = wy.WriteEvent(l.conn, e)
			}
			if err != nil {
				l.fail(fmt.Errorf("wake wyoming: %s: send audio: %w", l.d.Addr, err))
				return
			}
		}
	}
}

func (l *Listener) read() {
	defer l.wg.Done()
	defer close(l.det)
	r := bufio.NewReader(l.conn)
	for {
		ev, err := wy.ReadEvent(r)
		if err != nil {
			select {
			case <-l.stop: // closed on purpose
			default:
				l.fail(fmt.Errorf("wake wyoming: %s: %w", l.d.Addr, err))
			}
			return
		}
		switch ev.Type {
		case "detection":
			var d struct {
				Name *string `json:"name"`
			}
			if err := ev.Decode(&d); err != nil || d.Name == nil || *d.Name == "" {
				l.fail(fmt.Errorf("wake wyoming: %s: a detection without a name: %w", l.d.Addr, wy.ErrProtocol))
				return
			}
			select {
			case l.det <- wake.Detection{Name: *d.Name, At: time.Now()}:
			default: // nobody reads: the detection is stale by now anyway
			}
		case "not-detected":
		case "error":
			var e struct {
				Text string `json:"text"`
			}
			ev.Decode(&e)
			l.fail(fmt.Errorf("wake wyoming: %s says: %q", l.d.Addr, e.Text))
			return
		default:
			l.fail(fmt.Errorf("wake wyoming: %s: unexpected %s event: %w", l.d.Addr, ev.Type, wy.ErrProtocol))
			return
		}
	}
}

// Detections implements wake.Listener.
func (l *Listener) Detections() <-chan wake.Detection { return l.det }

// Close implements wake.Listener.
func (l *Listener) Close() error {
	l.shut()
	l.wg.Wait()
	return nil
}
