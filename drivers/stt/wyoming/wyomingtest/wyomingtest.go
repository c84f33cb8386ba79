// Package wyomingtest is a Wyoming speech-to-text server for tests and
// benchmarks: it speaks the real protocol (drivers/wyoming's events),
// checks what a client sends (transcribe, audio-start, audio-chunks of
// the announced format, audio-stop, in that order) and answers a
// transcript a fixed Delay after the audio stopped, as a fast server on a
// LAN box would (plus Load on its first utterance, as a server that loads
// its model then). It records each utterance it heard.
//
// With Partial set it streams as a Wyoming 1.7 server does: its info says
// supports_transcript_streaming; at the first audio it sends
// transcript-start, and after each audio-chunk whose hypothesis grew a
// transcript-chunk with the part that is new; after audio-stop the
// transcript (the whole text, for older clients) and transcript-stop.
//
// # Concurrency
//
// Safe for concurrent use: each connection is served on its own
// goroutine, all of which Close waits for.
package wyomingtest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// Server is the fake.
type Server struct {
	// Text is the transcript of an utterance of samples at rate; nil
	// answers "" (nothing recognised).
	Text  func(samples, rate int) string
	Delay time.Duration // from audio-stop to the transcript
	// Load is added to the first utterance's Delay: a server that loads
	// its model on its first utterance (wyoming-faster-whisper).
	Load time.Duration
	// Partial is the hypothesis of the audio heard so far (samples at
	// rate); set, the server streams transcript chunks (package doc).
	Partial func(samples, rate int) string

	ln net.Listener
	wg sync.WaitGroup

	mu         sync.Mutex
	loaded     bool
	problems   []string
	utterances []Utterance
}

// Utterance is one recognition the server served.
type Utterance struct {
	Samples int
	Rate    int
	Stopped time.Time // audio-stop arrived
	Took    time.Duration
}

// Start listens on a free loopback port.
func (s *Server) Start() (addr string, err error) {
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.wg.Add(1)
	go s.serve()
	return s.ln.Addr().String(), nil
}

// Close stops the server and waits for its connections.
func (s *Server) Close() {
	if s.ln != nil {
		s.ln.Close()
	}
	s.wg.Wait()
}

// Problems are the protocol mistakes clients made.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Utterances are the recognitions served, in order.
func (s *Server) Utterances() []Utterance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Utterance(nil), s.utterances...)
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	if len(s.problems) < 100 {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
	s.mu.Unlock()
}

func (s *Server) serve() {
	defer s.wg.Done()
	Serve(s.ln, &s.wg, s.handle)
}

// Serve accepts connections on ln until it is closed, and handles each on
// a goroutine of its own that wg counts, closing the connection after.
// Any fake Wyoming server (speech to text, wake words) serves with it.
func Serve(ln net.Listener, wg *sync.WaitGroup, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			handle(c)
		}()
	}
}

// stream sends what the hypothesis of samples grew by since said: a
// transcript-start before the first, then a transcript-chunk of the new
// part.
func (s *Server) stream(c net.Conn, said *string, samples, rate int) error {
	now := s.Partial(samples, rate)
	grown, ok := strings.CutPrefix(now, *said)
	if !ok || grown == "" {
		return nil
	}
	if *said == "" {
		start, _ := wy.NewEvent("transcript-start", nil, nil)
		if err := wy.WriteEvent(c, start); err != nil {
			return err
		}
	}
	*said = now
	chunk, _ := wy.NewEvent("transcript-chunk", map[string]any{"text": grown}, nil)
	return wy.WriteEvent(c, chunk)
}

type format struct {
	Rate     int `json:"rate"`
	Width    int `json:"width"`
	Channels int `json:"channels"`
}

func (s *Server) handle(c net.Conn) {
	r := bufio.NewReader(c)
	var f format
	bytes := 0
	said := "" // the hypothesis streamed so far
	for step := 0; ; step++ {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		ev, err := wy.ReadEvent(r)
		if err != nil {
			return // the client went away (an aborted utterance)
		}
		switch {
		case ev.Type == "describe":
			info, _ := wy.NewEvent("info", map[string]any{"asr": []map[string]any{{"name": "wyomingtest", "installed": true,
				"models":                        []map[string]any{{"name": "fake", "languages": []string{"en", "ja"}, "installed": true}},
				"supports_transcript_streaming": s.Partial != nil}}}, nil)
			wy.WriteEvent(c, info)
			return
		case step == 0 && ev.Type != "transcribe":
			s.problem("first event %s, want transcribe", ev.Type)
		case step == 1 && ev.Type != "audio-start":
			s.problem("second event %s, want audio-start", ev.Type)
		case ev.Type == "audio-start":
			if err := ev.Decode(&f); err != nil || f.Width != 2 || f.Channels != 1 || f.Rate < 8000 {
				s.problem("audio-start %v: want s16 mono", ev.Data)
			}
		case ev.Type == "audio-chunk":
			var cf format
			if err := ev.Decode(&cf); err != nil || cf != f {
				s.problem("audio-chunk format %+v, announced %+v", cf, f)
			}
			bytes += len(ev.Payload)
			if s.Partial != nil {
				if err := s.stream(c, &said, bytes/2, f.Rate); err != nil {
					return
				}
			}
		case ev.Type == "audio-stop":
			stopped := time.Now()
			samples := bytes / 2
			text := ""
			if s.Text != nil {
				text = s.Text(samples, f.Rate)
			}
			s.mu.Lock()
			delay := s.Delay
			if !s.loaded {
				delay += s.Load
				s.loaded = true
			}
			s.mu.Unlock()
			time.Sleep(delay)
			// Recorded before it is answered: a test that reads Utterances
			// once it has the transcript finds it there.
			s.mu.Lock()
			s.utterances = append(s.utterances, Utterance{Samples: samples, Rate: f.Rate, Stopped: stopped, Took: time.Since(stopped)})
			s.mu.Unlock()
			tr, _ := wy.NewEvent("transcript", map[string]any{"text": text}, nil)
			if err := wy.WriteEvent(c, tr); err != nil {
				return
			}
			if s.Partial != nil {
				stop, _ := wy.NewEvent("transcript-stop", nil, nil)
				wy.WriteEvent(c, stop)
			}
			return
		}
	}
}
