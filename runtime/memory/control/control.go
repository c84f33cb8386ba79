// Package control is a device's memory controlled over the bus (issue
// 29): the device answers memory requests (list, export, forget, wipe,
// and the voiceprints') that identities send under their own names, as
// queries of type protocol.TypeMemory on a private query server
// (runtime/query, Server.Private: each identity's requests on its own
// topic, answered on that topic's answer, which only it reads); the
// asking side is query.Memory over a Private query client (chorus
// memory, the bridge).
//
// Who may do what is decided here, by the identity of the request's
// topic (the broker lets only that identity publish there, and only it
// reads the answer): an operator (memory.operators) may list, export and
// forget anyone's facts and wipe them all; anyone else may list, export
// and forget only their own.
//
// # Concurrency
//
// Handle is safe for concurrent use; the query server runs it on its own
// goroutines, never on a bus handler. A request seen again with its id
// (a client that sends it again in a new query) gets the answer it had.
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
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// answersKept bounds the answers kept for requests seen again.
const answersKept = 128

// Memory answers a device's memory requests.
type Memory struct {
	Store *memory.Store
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

	mu      sync.Mutex // one request at a time: the store's disk work, the answers
	answers map[string]protocol.MemoryAnswer
	order   []string
}

type request struct {
	from string
	req  protocol.MemoryRequest
}

// Handle is the query handler of protocol.TypeMemory: from is the
// identity whose topic the request came on. A request that does not
// decode is an error naming what is wrong; a refused one is an answer
// whose Error says why.
func (s *Memory) Handle(_ context.Context, from string, body json.RawMessage) (any, error) {
	req, err := protocol.DecodeMemoryRequest(body, protocol.MaxMemoryRequestBytes)
	if err != nil {
		metrics.OrNew(s.Metrics).Reject(s.log(), string(topic.KindMemory), from, string(protocol.KindOf(err)), err)
		return nil, err
	}
	key := from + "\x00" + req.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, seen := s.answers[key]; seen {
		metrics.OrNew(s.Metrics).Duplicates.WithLabelValues("memory", "request").Inc()
		return a, nil
	}
	a := s.do(request{from: from, req: req})
	a.ID = req.ID
	if s.answers == nil {
		s.answers = map[string]protocol.MemoryAnswer{}
	}
	s.answers[key] = a
	s.order = append(s.order, key)
	if len(s.order) > answersKept {
		delete(s.answers, s.order[0])
		s.order = s.order[1:]
	}
	return a, nil
}

func (s *Memory) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Refused says why a request was refused.
var errRefused = errors.New("refused")

// do runs one request.
func (s *Memory) do(r request) protocol.MemoryAnswer {
	req, op := r.req, s.IsOperator != nil && s.IsOperator(r.from)
	if req.Op == protocol.MemoryForget && req.Person == "" && req.Fact != "" {
		// A fact's id names whose it is: the rule below is then the same
		// as for a request that named the person.
		if req.Person = s.owner(req.Fact); req.Person == "" {
			return protocol.MemoryAnswer{} // no such fact (forgotten already): nothing to forget
		}
	}
	if !op && req.Person == "" && (req.Op == protocol.MemoryList || req.Op == protocol.MemoryExport || req.Op == protocol.MemoryVoices) {
		req.Person = r.from // a person's list without a name is their own
	}
	if err := allowed(r.from, op, req); err != nil {
		metrics.OrNew(s.Metrics).Reject(s.log(), string(topic.KindMemory), r.from, "refused", err)
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
func (s *Memory) voices(req protocol.MemoryRequest) protocol.MemoryAnswer {
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
		s.log().Info("memory control: voice enrolled", "person", req.Person, "embeddings", len(req.Embeddings))
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
func (s *Memory) owner(id string) string {
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

// Serve answers device's memory requests with m until ctx ends: a
// private query server (runtime/query, Server.Private) on b, running one
// request at a time (the store's disk work).
func Serve(ctx context.Context, b bus.Bus, s topic.Scheme, device string, m *Memory) error {
	srv := &query.Server{Bus: b, Scheme: s, Device: device, Private: true, MaxRunning: 1, MaxBytes: protocol.MaxMemoryRequestBytes + 4096, Log: m.Log, Metrics: m.Metrics}
	srv.Handle(protocol.TypeMemory, m.Handle)
	return srv.Serve(ctx)
}
