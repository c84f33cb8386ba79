package air

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// DialTimeout bounds connecting to the air and its hello.
const DialTimeout = 5 * time.Second

// dial connects to the air at addr and says hello; it returns the
// connection and its reader, positioned after the server's reply.
func dial(ctx context.Context, addr string, h Hello) (net.Conn, *bufio.Reader, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("air %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	br := bufio.NewReader(c)
	if _, err = c.Write(encodeLine(h)); err == nil {
		var line []byte
		if line, err = readLine(br); err == nil {
			var r Reply
			if r, err = DecodeReply(line); err == nil && r.Error != "" {
				err = fmt.Errorf("refused: %s", r.Error)
			}
		}
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, nil, fmt.Errorf("air %s: hello as %s %q: %w", addr, h.Role, h.ID, err)
	}
	c.SetDeadline(time.Time{})
	return c, br, nil
}

// sendAhead bounds how much audio a link has sent that has not played:
// well under SourceBuffer, so the server has read all of it and a flush
// drops it all.
const sendAhead = 200 * time.Millisecond

// link is one source connection: a local queue of what streams wrote, a
// sender that hands it to the server no more than sendAhead before it
// plays, and a reader of the played counts.
//
// It owns two goroutines, which stop when the connection closes.
type link struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	rate int

	wmu sync.Mutex // serializes frames on the connection; taken before mu

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every change
	pending  []int16       // written, not yet sent
	accepted uint64        // samples written: sent and pending
	sent     uint64
	done     uint64 // played or flushed, as the server last said
	err      error  // why the link is dead

	wg sync.WaitGroup
}

func newLink(ctx context.Context, addr string, h Hello) (*link, error) {
	c, br, err := dial(ctx, addr, h)
	if err != nil {
		return nil, err
	}
	l := &link{addr: addr, c: c, br: br, rate: h.Rate, changed: make(chan struct{})}
	l.wg.Go(l.read)
	l.wg.Go(l.send)
	return l, nil
}

// update changes the state under mu and wakes every waiter.
func (l *link) update(f func()) {
	l.mu.Lock()
	f()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *link) fail(err error) {
	l.update(func() {
		if l.err == nil {
			l.err = err
		}
	})
	l.c.Close()
}

// read takes the server's frames until the connection ends.
func (l *link) read() {
	for {
		f, err := ReadFrame(l.br, 0)
		if err != nil {
			l.fail(fmt.Errorf("air %s: lost the air server: %w", l.addr, err))
			return
		}
		switch f.Type {
		case FrameDone:
			n := Done(f.Payload)
			l.update(func() { l.done = n })
		case FrameError:
			l.fail(fmt.Errorf("air %s: the air server closed the connection: %s", l.addr, f.Payload))
			return
		default:
			l.fail(fmt.Errorf("air %s: %w: a source is sent only %q and %q frames, got %q", l.addr, ErrBadFrame, FrameDone, FrameError, f.Type))
			return
		}
	}
}

// send hands pending audio to the server, at most sendAhead before it
// plays, in pieces of at most 100 ms.
func (l *link) send() {
	ahead := uint64(int64(l.rate) * int64(sendAhead) / int64(time.Second))
	piece := l.rate / 10
	for {
		l.mu.Lock()
		wake, err := l.changed, l.err
		ready := len(l.pending) > 0 && l.sent-l.done < ahead
		l.mu.Unlock()
		if err != nil {
			return
		}
		if !ready {
			<-wake
			continue
		}
		l.wmu.Lock()
		var x []int16
		l.update(func() {
			room := int(ahead - (l.sent - l.done))
			k := min(len(l.pending), piece, max(room, 0))
			x = l.pending[:k:k]
			l.pending = l.pending[k:]
			l.sent += uint64(k)
		})
		if len(x) == 0 { // flushed meanwhile
			l.wmu.Unlock()
			continue
		}
		err = l.write(AppendPCM(nil, x))
		l.wmu.Unlock()
		if err != nil {
			l.fail(fmt.Errorf("air %s: lost the air server: %w", l.addr, err))
			return
		}
	}
}

// write sends one frame; call it with wmu held.
func (l *link) write(b []byte) error {
	l.c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := l.c.Write(b)
	return err
}

// state is a snapshot: samples written and not done, the channel that
// closes at the next change, and the link's error.
func (l *link) state() (ahead uint64, wake chan struct{}, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted - l.done, l.changed, l.err
}

func (l *link) dead() bool {
	_, _, err := l.state()
	return err != nil
}

// enqueue queues x to be sent; it returns the count accepted after it.
func (l *link) enqueue(x []int16) uint64 {
	var n uint64
	l.update(func() {
		l.pending = append(l.pending, x...)
		l.accepted += uint64(len(x))
		n = l.accepted
	})
	return n
}

// flush drops what is not sent and tells the server to drop what it has
// queued.
func (l *link) flush() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.update(func() {
		l.accepted -= uint64(len(l.pending))
		l.pending = nil
	})
	if l.dead() {
		return
	}
	if err := l.write(AppendFrame(nil, FrameFlush, nil)); err != nil {
		l.fail(fmt.Errorf("air %s: lost the air server: %w", l.addr, err))
	}
}

// waitDone waits until the server has played count samples, at most
// limit.
func (l *link) waitDone(ctx context.Context, count uint64, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		l.mu.Lock()
		done, wake, err := l.done, l.changed, l.err
		l.mu.Unlock()
		switch {
		case done >= count:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("air %s: audio not played %v after it should have", l.addr, limit)
		}
	}
}

// close ends the connection and waits for the link's goroutines.
func (l *link) close() {
	l.fail(fmt.Errorf("air %s: closed", l.addr))
	l.wg.Wait()
}
