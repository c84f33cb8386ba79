// Package control is a device's memory controlled over the bus (issue
// 29): the device's Server answers memory requests (list, export,
// forget, wipe) that identities publish under their own names, and Ask is
// the asking side (chorus memory, tests).
//
// Who may do what is decided here, by the identity in the request's topic
// (the broker lets only that identity publish there, and only it reads
// the answer): an operator (memory.operators) may list, export and forget
// anyone's facts and wipe them all; anyone else may list, export and
// forget only their own.
//
// # Concurrency
//
// The bus handler only decodes and queues (bounded; a full queue drops
// the request, counted): the store's disk work and the answer's publish
// run on the Server's own goroutine. A request seen again (at-least-once
// delivery) gets the answer it had.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

const (
	queueSize      = 32
	answersKept    = 128
	publishTimeout = 10 * time.Second
)

// Server answers a device's memory requests.
type Server struct {
	Bus    bus.Bus
	Scheme topic.Scheme
	Device string
	Store  *memory.Store
	// Voices are the device's voiceprints, nil when it keeps none: forget
	// and wipe erase them with the facts.
	Voices *memory.Voices
	// Person says whether an identity is one of the people the robots may
	// know by voice (hearing.people): only they are enrolled. Nil: nobody.
	Person func(id string) bool
	// IsOperator says whether an identity may read and forget everyone's.
	IsOperator func(id string) bool
	// Forgot is told what a forget erased (the companion's report to its
	// room); nil tells nobody.
	Forgot  func(person string, n int)
	Log     *slog.Logger
	Metrics *metrics.Metrics

	queue   chan request
	mu      sync.Mutex
	answers map[string][]byte // by requester and request id
	order   []string
}

type request struct {
	from string
	req  protocol.MemoryRequest
}

// Run subscribes and answers until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	s.Metrics = metrics.OrNew(s.Metrics)
	s.queue = make(chan request, queueSize)
	s.answers = map[string][]byte{}
	err := s.Bus.Subscribe(ctx, s.Scheme.MemoryRequests(s.Device), func(t string, payload []byte) {
		r, ok := s.Scheme.Parse(t)
		if !ok || r.Kind != topic.KindMemory || r.Device != s.Device {
			return
		}
		req, err := protocol.DecodeMemoryRequest(payload, 0)
		if err != nil {
			s.Metrics.Reject(s.Log, string(topic.KindMemory), r.Identity, string(protocol.KindOf(err)), err)
			return
		}
		select {
		case s.queue <- request{from: r.Identity, req: req}:
		default:
			s.Metrics.QueueDrops.WithLabelValues("memory", "request").Inc()
		}
	})
	if err != nil {
		return fmt.Errorf("memory control: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-s.queue:
			s.answer(ctx, r)
		}
	}
}

func (s *Server) answer(ctx context.Context, r request) {
	key := r.from + "\x00" + r.req.ID
	s.mu.Lock()
	b, seen := s.answers[key]
	s.mu.Unlock()
	if !seen {
		a := s.do(r)
		a.ID = r.req.ID
		b, _ = json.Marshal(a)
		s.mu.Lock()
		s.answers[key] = b
		s.order = append(s.order, key)
		if len(s.order) > answersKept {
			delete(s.answers, s.order[0])
			s.order = s.order[1:]
		}
		s.mu.Unlock()
	} else {
		s.Metrics.Duplicates.WithLabelValues("memory", "request").Inc()
	}
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := s.Bus.Publish(pctx, s.Scheme.MemoryAnswer(s.Device, r.from), b, false); err != nil {
		s.Log.Warn("memory control: answer not sent", "to", r.from, "err", err)
	}
}

// Refused says why a request was refused.
var errRefused = errors.New("refused")

// do runs one request.
func (s *Server) do(r request) protocol.MemoryAnswer {
	req, op := r.req, s.IsOperator != nil && s.IsOperator(r.from)
	if req.Op == protocol.MemoryForget && req.Person == "" && req.Fact != "" {
		// A fact's id names whose it is: the rule below is then the same
		// as for a request that named the person.
		req.Person = s.owner(req.Fact)
	}
	if !op && req.Person == "" && (req.Op == protocol.MemoryList || req.Op == protocol.MemoryExport || req.Op == protocol.MemoryVoices) {
		req.Person = r.from // a person's list without a name is their own
	}
	if err := allowed(r.from, op, req); err != nil {
		s.Metrics.Reject(s.Log, string(topic.KindMemory), r.from, "refused", err)
		return protocol.MemoryAnswer{Error: err.Error()}
	}
	switch req.Op {
	case protocol.MemoryList, protocol.MemoryExport:
		facts := s.Store.Facts(req.Person)
		if len(facts) > protocol.MaxMemoryFacts {
			facts = facts[len(facts)-protocol.MaxMemoryFacts:]
		}
		out := make([]protocol.MemoryFact, 0, len(facts))
		for _, f := range facts {
			mf := f.Wire()
			mf.Created = f.Created.UTC()
			if req.Op != protocol.MemoryExport {
				mf.Robot, mf.MessageID, mf.Supersedes = "", "", "" // export only
			}
			out = append(out, mf)
		}
		return protocol.MemoryAnswer{Facts: out}
	case protocol.MemoryForget:
		var ids []string
		if req.Fact != "" {
			ids = []string{req.Fact}
		}
		n, err := s.Store.Forget(req.Person, ids...)
		if err != nil {
			return protocol.MemoryAnswer{Error: err.Error()}
		}
		if req.Fact == "" && s.Voices != nil { // everything about them: their voice too
			if _, err := s.Voices.Forget(req.Person, time.Time{}); err != nil {
				return protocol.MemoryAnswer{Error: err.Error()}
			}
		}
		if s.Forgot != nil && n > 0 { // nothing erased: nothing to tell the room
			s.Forgot(req.Person, n)
		}
		return protocol.MemoryAnswer{Forgotten: n}
	case protocol.MemoryWipe:
		n, err := s.Store.Wipe()
		if err != nil {
			return protocol.MemoryAnswer{Error: err.Error()}
		}
		if s.Voices != nil {
			if err := s.Voices.Wipe(); err != nil {
				return protocol.MemoryAnswer{Error: err.Error()}
			}
		}
		return protocol.MemoryAnswer{Forgotten: n}
	case protocol.MemoryVoices, protocol.MemoryForgetVoice, protocol.MemoryEnrolVoice:
		return s.voices(req)
	}
	return protocol.MemoryAnswer{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// voices answers the voiceprints' requests.
func (s *Server) voices(req protocol.MemoryRequest) protocol.MemoryAnswer {
	if s.Voices == nil {
		return protocol.MemoryAnswer{Error: "this device keeps no voiceprints (hearing.voice is off)"}
	}
	switch req.Op {
	case protocol.MemoryForgetVoice:
		n, err := s.Voices.Forget(req.Person, time.Time{})
		if err != nil {
			return protocol.MemoryAnswer{Error: err.Error()}
		}
		return protocol.MemoryAnswer{Forgotten: n}
	case protocol.MemoryEnrolVoice:
		if s.Person == nil || !s.Person(req.Person) {
			return protocol.MemoryAnswer{Error: fmt.Sprintf("%s is not one of the people this room may know by voice (hearing.people)", req.Person)}
		}
		for _, v := range s.Voices.List() {
			if v.Person != req.Person && v.Model != "" && v.Model != req.Model {
				return protocol.MemoryAnswer{Error: fmt.Sprintf("the embeddings are of model %q; this device's voiceprints are of %q", req.Model, v.Model)}
			}
		}
		if _, err := s.Voices.Forget(req.Person, time.Time{}); err != nil {
			return protocol.MemoryAnswer{Error: err.Error()}
		}
		if err := s.Voices.Add(req.Person, req.Model, time.Now(), req.Embeddings...); err != nil {
			return protocol.MemoryAnswer{Error: err.Error()}
		}
		s.Log.Info("memory control: voice enrolled", "person", req.Person, "embeddings", len(req.Embeddings))
	}
	out := []protocol.VoicePrint{}
	for _, v := range s.Voices.List() {
		if req.Person == "" || v.Person == req.Person {
			out = append(out, protocol.VoicePrint{Person: v.Person, Samples: v.Samples, Dims: v.Dims, Model: v.Model, Updated: v.Updated.UTC()})
		}
	}
	return protocol.MemoryAnswer{Voices: out}
}

// owner is the person fact id is about, "" when no fact has that id.
func (s *Server) owner(id string) string {
	for _, f := range s.Store.Facts("") {
		if f.ID == id {
			return f.Person
		}
	}
	return ""
}

// allowed is the rule: an operator may do anything; anyone else only
// list, export and forget their own facts and voiceprint. Enrolling a
// voice by command is an operator's: whose recordings they are, the
// robot cannot tell (a person enrols themselves by voice).
func allowed(from string, operator bool, req protocol.MemoryRequest) error {
	switch {
	case operator:
		return nil
	case req.Op == protocol.MemoryWipe:
		return fmt.Errorf("%w: only an operator (memory.operators) may wipe the memory; %s is not one", errRefused, from)
	case req.Op == protocol.MemoryEnrolVoice:
		return fmt.Errorf("%w: only an operator (memory.operators) may enrol a voice by command; %s can say \"remember my voice\" to a robot", errRefused, from)
	case req.Person == "":
		return fmt.Errorf("%w: only an operator may see everyone's facts; %s may ask about %s", errRefused, from, from)
	case req.Person != from:
		return fmt.Errorf("%w: %s may not see or forget what is remembered about %s", errRefused, from, req.Person)
	}
	return nil
}

// Ask sends req to device's memory as identity as (b's identity) and
// waits for the answer, up to timeout: NewAsker(b, s, as).Ask, for one
// question.
func Ask(ctx context.Context, b bus.Bus, s topic.Scheme, as, device string, req protocol.MemoryRequest, timeout time.Duration) (protocol.MemoryAnswer, error) {
	return NewAsker(b, s, as).Ask(ctx, device, req, timeout)
}

// Asker asks devices about their memory as one identity on one
// connection: one subscription to every memory answer to the identity,
// made at the first question and kept with the connection (a bus
// subscription lasts until its connection closes), and each question
// waits for the answer with its id. A connection that lives long (the
// bridge's, for its clients' identities) keeps one handler, not one per
// question. Safe for concurrent use.
type Asker struct {
	b  bus.Bus
	s  topic.Scheme
	as string

	subMu      sync.Mutex // one subscription, made once
	subscribed bool

	mu      sync.Mutex
	waiting map[string]chan protocol.MemoryAnswer // by request id
}

// NewAsker is an Asker for identity as on b; it subscribes at the first
// question.
func NewAsker(b bus.Bus, s topic.Scheme, as string) *Asker {
	return &Asker{b: b, s: s, as: as, waiting: map[string]chan protocol.MemoryAnswer{}}
}

// Waiting is how many questions wait for their answer.
func (a *Asker) Waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiting)
}

func (a *Asker) subscribe(ctx context.Context) error {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if a.subscribed {
		return nil
	}
	// The connection's own life, not the first question's: the one
	// subscription serves every later question.
	err := a.b.Subscribe(context.WithoutCancel(ctx), a.s.MemoryAnswer("+", a.as), func(t string, payload []byte) {
		r, ok := a.s.Parse(t)
		if !ok || r.Kind != topic.KindMemoryAnswer || r.Identity != a.as {
			return
		}
		ans, err := protocol.DecodeMemoryAnswer(payload, protocol.MaxMemoryFacts*1024)
		if err != nil {
			return
		}
		a.mu.Lock()
		got := a.waiting[r.Device+"\x00"+ans.ID]
		a.mu.Unlock()
		if got != nil {
			select { // a bus handler never blocks: a repeat is dropped
			case got <- ans:
			default:
			}
		}
	})
	if err == nil {
		a.subscribed = true
	}
	return err
}

// Ask sends req to device's memory and waits for the answer, up to
// timeout, sending it again every 2 s (at least once: the device answers
// a repeat with the same answer). An answer with Error is an error.
func (a *Asker) Ask(ctx context.Context, device string, req protocol.MemoryRequest, timeout time.Duration) (protocol.MemoryAnswer, error) {
	if req.ID == "" {
		req.ID = protocol.NewID()
	}
	if err := a.subscribe(ctx); err != nil {
		return protocol.MemoryAnswer{}, fmt.Errorf("memory of %s: %w", device, err)
	}
	key := device + "\x00" + req.ID
	got := make(chan protocol.MemoryAnswer, 1)
	a.mu.Lock()
	a.waiting[key] = got
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, key)
		a.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, _ := json.Marshal(req)
	noAnswer := fmt.Errorf("memory of %s: no answer within %v (is it online, with memory on?)", device, timeout)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		if err := a.b.Publish(ctx, a.s.Memory(device, a.as), body, false); err != nil {
			if ctx.Err() != nil { // a resend that met the deadline: no answer
				return protocol.MemoryAnswer{}, noAnswer
			}
			return protocol.MemoryAnswer{}, fmt.Errorf("memory of %s: %w", device, err)
		}
		select {
		case ans := <-got:
			if ans.Error != "" {
				return ans, fmt.Errorf("memory of %s: %s", device, ans.Error)
			}
			return ans, nil
		case <-ctx.Done():
			return protocol.MemoryAnswer{}, noAnswer
		case <-tick.C:
		}
	}
}
