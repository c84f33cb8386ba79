// Package waketest is a fake wake.Detector for tests: the test says when
// the wake word is heard (Detector.Hear); a listener delivers it after the
// next audio it is given, as a real server answers the audio it got. It
// records how much audio each listener received, and can be made to fail.
package waketest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/wake"
)

// Detector is the fake.
type Detector struct {
	mu        sync.Mutex
	ListenErr error // Listen fails with it
	listeners []*Listener
	heard     []string // wake words to deliver, in order
	samples   int
}

var _ wake.Detector = (*Detector)(nil)

// Name implements wake.Detector.
func (d *Detector) Name() string { return "fake" }

// Listen implements wake.Detector.
func (d *Detector) Listen(ctx context.Context, rate int) (wake.Listener, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ListenErr != nil {
		return nil, d.ListenErr
	}
	l := &Listener{d: d, det: make(chan wake.Detection, 16), done: make(chan struct{})}
	d.listeners = append(d.listeners, l)
	return l, nil
}

// Hear makes the detector hear name with the next audio it gets.
func (d *Detector) Hear(name string) {
	d.mu.Lock()
	d.heard = append(d.heard, name)
	d.mu.Unlock()
}

// Samples is how much audio all listeners received.
func (d *Detector) Samples() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.samples
}

// Fail ends every open listener with err.
func (d *Detector) Fail(err error) {
	d.mu.Lock()
	ls := d.listeners
	d.listeners = nil
	d.mu.Unlock()
	for _, l := range ls {
		l.end(err)
	}
}

// Listener is one fake stream.
type Listener struct {
	d    *Detector
	det  chan wake.Detection
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Write implements wake.Listener.
func (l *Listener) Write(pcm []int16) error {
	select {
	case <-l.done:
		if err := l.Err(); err != nil {
			return err
		}
		return errors.New("waketest: closed")
	default:
	}
	l.d.mu.Lock()
	l.d.samples += len(pcm)
	heard := l.d.heard
	l.d.heard = nil
	l.d.mu.Unlock()
	for _, name := range heard {
		select {
		case l.det <- wake.Detection{Name: name, At: time.Now()}:
		default:
		}
	}
	return nil
}

// Detections implements wake.Listener.
func (l *Listener) Detections() <-chan wake.Detection { return l.det }

// Err implements wake.Listener.
func (l *Listener) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Listener) end(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.done)
		close(l.det)
	})
}

// Close implements wake.Listener.
func (l *Listener) Close() error {
	l.end(nil)
	return nil
}
