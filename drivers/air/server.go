package air

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

// Defaults of the server.
const (
	DefaultRate        = mic.DefaultRate
	DefaultAttenuation = 0.5
	DefaultDelay       = 10 * time.Millisecond
	// FrameDuration is one tick of the mix and one frame a mic hears.
	FrameDuration = 20 * time.Millisecond
	// SourceBuffer is how much audio the server queues for a source; it
	// reads the source's connection only while its queue has room.
	SourceBuffer = 2 * time.Second
	// MicBuffer is how many frames wait for a mic that reads slowly;
	// more are dropped and counted.
	MicBuffer = 25
	// HelloTimeout bounds the wait for a client's hello.
	HelloTimeout = 5 * time.Second
	// WriteTimeout bounds one write to a client: a client that takes
	// nothing for that long is closed.
	WriteTimeout = 10 * time.Second
	// MaxRecord bounds Server.Record: the first half hour of the room.
	MaxRecord = 30 * time.Minute
	// maxCatchUp is how many ticks a late mixer makes up at once; beyond
	// it, the time is skipped.
	maxCatchUp = 50
)

// Server is the shared acoustic space.
type Server struct {
	// Listen is the TCP address ("127.0.0.1:0" for a free port).
	Listen string
	// Rate is the air's sample rate (default DefaultRate); every client
	// says it in its hello.
	Rate int
	// Attenuation is the gain of another robot's speaker at a mic
	// (default DefaultAttenuation).
	Attenuation float64
	// Delay is how late another robot's speaker is heard (default
	// DefaultDelay; negative for none).
	Delay time.Duration
	Log   *slog.Logger
	// Record, when set, is where the room is recorded as one listener in
	// its middle hears it — every speaker and every person at gain 1 —
	// as a WAV file written when Run returns (the demo's room.wav, with
	// the person in it). At most MaxRecord is kept.
	Record string
	// ValidID checks a client's id: the room's identity rule
	// (protocol.ValidIdentity, which the CLI hands in: a driver imports
	// nothing of the runtime). It says what is wrong, "" when nothing is;
	// nil takes any id DecodeHello's own bounds take.
	ValidID func(string) string

	once  sync.Once
	rec   []int16 // owned by the mixer
	ready chan struct{}
	addr  string // set before ready is closed

	mu      sync.Mutex
	sources map[*source]struct{}
	mics    map[*micClient]struct{}
	dropped map[string]uint64 // frames dropped per mic id
}

func (s *Server) init() {
	s.once.Do(func() {
		s.ready = make(chan struct{})
		s.sources = map[*source]struct{}{}
		s.mics = map[*micClient]struct{}{}
		s.dropped = map[string]uint64{}
	})
}

func (s *Server) rate() int {
	if s.Rate > 0 {
		return s.Rate
	}
	return DefaultRate
}

func (s *Server) attenuation() float64 {
	if s.Attenuation > 0 {
		return s.Attenuation
	}
	return DefaultAttenuation
}

func (s *Server) delay() time.Duration {
	switch {
	case s.Delay < 0:
		return 0
	case s.Delay == 0:
		return DefaultDelay
	}
	return s.Delay
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Ready is closed once the server listens (Addr is then set) or Run
// failed to listen.
func (s *Server) Ready() <-chan struct{} {
	s.init()
	return s.ready
}

// Addr is the address the server listens on, "" before it does.
func (s *Server) Addr() string {
	s.init()
	select {
	case <-s.ready:
		return s.addr
	default:
		return ""
	}
}

// Dropped is how many frames were dropped for mics with id because they
// did not read.
func (s *Server) Dropped(id string) uint64 {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped[id]
}

// Run listens and mixes until ctx ends; it closes every connection and
// waits for its goroutines before it returns. Call it once.
func (s *Server) Run(ctx context.Context) error {
	s.init()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Listen)
	if err != nil {
		close(s.ready)
		return fmt.Errorf("air: listen on %s: %w", s.Listen, err)
	}
	s.addr = ln.Addr().String()
	close(s.ready)
	log := s.log()
	log.Info("air: listening", "addr", s.addr, "rate", s.rate(), "attenuation", s.attenuation(), "delay", s.delay())
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		<-ctx.Done()
		ln.Close()
	})
	wg.Go(func() {
		s.mix(ctx)
		if s.Record != "" {
			if err := os.WriteFile(s.Record, audio.EncodeWAV(audio.PCM{Rate: s.rate(), Samples: s.rec}), 0o644); err != nil {
				log.Warn("air: recording not written", "file", s.Record, "err", err)
			}
		}
	})
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("air: accept on %s: %w", s.addr, err)
		}
		wg.Go(func() { s.serve(ctx, c) })
	}
}

// serve owns one connection until it ends or ctx does.
func (s *Server) serve(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	log := s.log().With("remote", c.RemoteAddr().String())
	c.SetDeadline(time.Now().Add(HelloTimeout))
	br := bufio.NewReader(c)
	line, err := readLine(br)
	if err == nil {
		var h Hello
		if h, err = DecodeHello(line, s.rate(), s.ValidID); err == nil {
			c.SetDeadline(time.Time{})
			if _, err := c.Write(encodeLine(Reply{Rate: s.rate()})); err != nil {
				return
			}
			log = log.With("role", h.Role, "id", h.ID)
			log.Info("air: joined")
			if h.Role == RoleMic {
				err = s.serveMic(ctx, c, br, h, log)
			} else {
				err = s.serveSource(ctx, c, br, h, log)
			}
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, ErrBadFrame):
				log.Warn("air: closing a client that broke the protocol", "err", err)
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write(AppendFrame(nil, FrameError, []byte(truncate(err.Error(), MaxErrorLen))))
			default:
				log.Info("air: left", "err", err)
			}
			return
		}
	}
	log.Warn("air: refusing a client", "err", err)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(encodeLine(Reply{Error: truncate(err.Error(), MaxHelloLen-32)}))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// source is a speaker or a person: a bounded queue the mixer takes one
// frame from each tick.
type source struct {
	hello Hello
	max   int // queue bound in samples

	mu    sync.Mutex
	queue []int16
	done  uint64 // samples played or flushed

	room   chan struct{} // signalled when the queue shrinks
	notify chan struct{} // signalled when done changes
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// put waits until the queue has room for x, then queues it.
func (q *source) put(ctx context.Context, x []int16) error {
	for {
		q.mu.Lock()
		if len(q.queue)+len(x) <= q.max {
			q.queue = append(q.queue, x...)
			q.mu.Unlock()
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take moves up to len(out) samples into out and counts them done.
func (q *source) take(out []int16) int {
	q.mu.Lock()
	n := copy(out, q.queue)
	q.queue = q.queue[:copy(q.queue, q.queue[n:])]
	q.done += uint64(n)
	q.mu.Unlock()
	if n > 0 {
		signal(q.room)
		signal(q.notify)
	}
	return n
}

// flush drops the queue, counting it done.
func (q *source) flush() {
	q.mu.Lock()
	n := len(q.queue)
	q.queue = q.queue[:0]
	q.done += uint64(n)
	q.mu.Unlock()
	signal(q.room)
	signal(q.notify)
}

func (q *source) doneCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done
}

func (s *Server) serveSource(ctx context.Context, c net.Conn, br *bufio.Reader, h Hello, log *slog.Logger) error {
	q := &source{hello: h, max: int(int64(s.rate()) * int64(SourceBuffer) / int64(time.Second)),
		room: make(chan struct{}, 1), notify: make(chan struct{}, 1)}
	defer enter(&s.mu, s.sources, q)()
	// The writer tells the client how much has played, as it changes.
	ctx, stop := alongside(ctx, func(ctx context.Context) {
		var sent uint64
		for {
			select {
			case <-q.notify:
			case <-ctx.Done():
				return
			}
			n := q.doneCount()
			if n == sent {
				continue
			}
			c.SetWriteDeadline(time.Now().Add(WriteTimeout))
			if _, err := c.Write(AppendDone(nil, n)); err != nil {
				c.Close()
				return
			}
			sent = n
		}
	})
	defer stop()
	for {
		f, err := ReadFrame(br, MaxPayload(s.rate()))
		if err != nil {
			return err
		}
		switch f.Type {
		case FramePCM:
			if err := q.put(ctx, Samples(f.Payload)); err != nil {
				return err
			}
		case FrameFlush:
			q.flush()
		default:
			return fmt.Errorf("%w: a %s sends only %q and %q frames, got %q", ErrBadFrame, h.Role, FramePCM, FrameFlush, f.Type)
		}
	}
}

// micClient is a microphone: the mixer sends it a frame each tick.
type micClient struct {
	hello Hello
	out   chan []byte // bounded: a mic that does not read loses frames

	// Owned by the mixer.
	line    []float64 // delay line of the other robots' speakers
	dropped uint64
}

func (s *Server) serveMic(ctx context.Context, c net.Conn, br *bufio.Reader, h Hello, log *slog.Logger) error {
	m := &micClient{hello: h, out: make(chan []byte, MicBuffer),
		line: make([]float64, int(int64(s.rate())*int64(s.delay())/int64(time.Second)))}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(8 << 10) // a mic that does not read shows soon
	}
	ctx, stop := alongside(ctx, func(ctx context.Context) {
		for {
			select {
			case b := <-m.out:
				c.SetWriteDeadline(time.Now().Add(WriteTimeout))
				if _, err := c.Write(b); err != nil {
					log.Warn("air: a mic took no audio; closing it", "err", err)
					c.Close()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	})
	defer stop()
	defer enter(&s.mu, s.mics, m)()
	// A mic sends nothing: the read ends when it leaves.
	f, err := ReadFrame(br, 0)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: a mic sends nothing, got %q", ErrBadFrame, f.Type)
}

// enter adds k to set under mu; the leave it returns takes it out again.
func enter[K comparable](mu *sync.Mutex, set map[K]struct{}, k K) (leave func()) {
	mu.Lock()
	set[k] = struct{}{}
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(set, k)
		mu.Unlock()
	}
}

// alongside runs write beside its caller on a context of ctx that ends
// when write returns; stop ends that context and waits for write.
func alongside(ctx context.Context, write func(ctx context.Context)) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		write(ctx)
	})
	return ctx, func() {
		cancel()
		wg.Wait()
	}
}

// mix runs the ticks in real time until ctx ends: the count of ticks is
// computed from the start, so the mix does not drift.
func (s *Server) mix(ctx context.Context) {
	n := s.rate() * int(FrameDuration/time.Millisecond) / 1000
	t := time.NewTicker(FrameDuration)
	defer t.Stop()
	start := time.Now()
	var ticks int64
	var srcs []*source
	var mics []*micClient
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		due := int64(time.Since(start) / FrameDuration)
		if due-ticks > maxCatchUp {
			s.log().Warn("air: the mix fell behind; skipping", "skipped", (time.Duration(due-ticks-1) * FrameDuration).String())
			ticks = due - 1
		}
		for ; ticks < due; ticks++ {
			s.mu.Lock()
			srcs, mics = srcs[:0], mics[:0]
			for q := range s.sources {
				srcs = append(srcs, q)
			}
			for m := range s.mics {
				mics = append(mics, m)
			}
			s.mu.Unlock()
			s.tick(n, srcs, mics)
		}
	}
}

// tick takes one frame of n samples from every source and sends each
// mic its mix: its own robot's speaker and persons at gain 1, other
// robots' speakers attenuated and delayed.
func (s *Server) tick(n int, srcs []*source, mics []*micClient) {
	person := make([]float64, n)
	robots := make([]float64, n)  // every speaker
	own := map[string][]float64{} // speakers by id
	buf := make([]int16, n)
	for _, q := range srcs {
		clear(buf)
		if q.take(buf) == 0 { // silence
			continue
		}
		if q.hello.Role == RolePerson {
			add(person, buf)
			continue
		}
		add(robots, buf)
		o := own[q.hello.ID]
		if o == nil {
			o = make([]float64, n)
			own[q.hello.ID] = o
		}
		add(o, buf)
	}
	if s.Record != "" && len(s.rec) < int(MaxRecord/FrameDuration)*n {
		for i := range n {
			s.rec = append(s.rec, clip(person[i]+robots[i]))
		}
	}
	att := s.attenuation()
	out := make([]int16, n)
	for _, m := range mics {
		o := own[m.hello.ID]
		for i := range n {
			other := robots[i]
			if o != nil {
				other -= o[i]
			}
			m.line = append(m.line, att*other)
		}
		for i := range n {
			v := person[i] + m.line[i]
			if o != nil {
				v += o[i]
			}
			out[i] = clip(v)
		}
		m.line = m.line[:copy(m.line, m.line[n:])]
		select {
		case m.out <- AppendPCM(make([]byte, 0, headerLen+2*n), out):
		default:
			m.dropped++
			s.mu.Lock()
			s.dropped[m.hello.ID]++
			s.mu.Unlock()
			if m.dropped == 1 {
				s.log().Warn("air: a mic does not read; dropping its frames", "id", m.hello.ID)
			}
		}
	}
}

func add(dst []float64, x []int16) {
	for i, v := range x {
		dst[i] += float64(v)
	}
}

func clip(v float64) int16 {
	return int16(max(math.MinInt16, min(math.MaxInt16, math.Round(v))))
}
