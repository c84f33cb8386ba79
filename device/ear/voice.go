package ear

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/voiceid"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Who is speaking (docs/hearing.md): with a Voice, the ear computes the
// speaker embedding of each utterance beside its transcript (the request
// goes out when the utterance ends, as the transcript is asked for),
// waits for it at most Voice.Wait after the transcript came, and matches
// it against the robot's voiceprints: the report says whose voice it is.
// A service that is down, slow or answers garbage leaves the voice
// unknown (one log line a minute), never delays the report further, and
// never fails it.

// Defaults of a Voice.
const (
	DefaultVoiceThreshold  = 0.35
	DefaultVoiceSure       = 0.25
	DefaultVoiceWait       = 150 * time.Millisecond
	DefaultEnrolUtterances = 3
	// enrolFor is how long an enrolment by voice waits for its next
	// utterance of the same voice.
	enrolFor = 2 * time.Minute
	// maxVoiceAudio bounds what is kept of an utterance for its
	// embedding: its first seconds say who speaks.
	maxVoiceAudio = 15 * time.Second
)

// Voice identifies speakers.
type Voice struct {
	Embedder voiceid.Embedder
	Prints   *memory.Voices
	// Threshold is the cosine distance within which the nearest
	// voiceprint's person is taken (default DefaultVoiceThreshold); Sure
	// the stricter one within which they are answered with what the
	// robots remember of them (default DefaultVoiceSure).
	Threshold, Sure float64
	// Wait is how long after the transcript the ear waits for the
	// embedding (default DefaultVoiceWait).
	Wait time.Duration
	// People are the room's people who may be known by voice, each with
	// the names they may give when they enrol ("remember my voice, I'm
	// Sam"): their identity always counts as one (case aside). Nil: no
	// enrolment by voice.
	People map[string][]string
	// Enrol is how many utterances make a voiceprint (default
	// DefaultEnrolUtterances): the request and the ones after it.
	Enrol int

	mu      sync.Mutex
	pending *enrolment
	failLog time.Time
}

type enrolment struct {
	name, person string
	vecs         [][]float32
	last         time.Time
}

func (v *Voice) defaults() {
	if !(v.Threshold > 0 && v.Threshold <= 2) {
		v.Threshold = DefaultVoiceThreshold
	}
	if !(v.Sure > 0 && v.Sure <= v.Threshold) {
		v.Sure = min(DefaultVoiceSure, v.Threshold)
	}
	if v.Wait <= 0 {
		v.Wait = DefaultVoiceWait
	}
	if v.Enrol <= 0 {
		v.Enrol = DefaultEnrolUtterances
	}
	v.Enrol = min(v.Enrol, protocol.MaxEnrolNeed)
}

// embedding is the answer of one embedding request.
type embedding struct {
	vec []float32
	err error
}

// embed asks for the embedding of pcm on a goroutine the ear owns; the
// answer comes on the channel (buffered: nobody need take it).
func (e *Ear) embed(ctx context.Context, pcm []int16, rate int) <-chan embedding {
	ch := make(chan embedding, 1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		vec, err := e.cfg.Voice.Embedder.Embed(ctx, pcm, rate)
		ch <- embedding{vec, err}
	}()
	return ch
}

// whose waits for the utterance's embedding at most Voice.Wait and says
// whose voice it is; text is its transcript (an enrolment request?).
func (e *Ear) whose(ch <-chan embedding, text string, at time.Time) *protocol.VoiceMatch {
	v := e.cfg.Voice
	t := time.NewTimer(v.Wait)
	defer t.Stop()
	var got embedding
	if ch == nil { // no audio kept: nothing to embed
		return v.enrolled(text, nil, at, &protocol.VoiceMatch{Distance: protocol.NoDistance})
	}
	select {
	case got = <-ch:
	case <-t.C:
		e.m.Hearing.WithLabelValues("voice_late").Inc()
		e.voiceFailed("no embedding within "+v.Wait.String()+" of the transcript", nil)
		return v.enrolled(text, nil, at, &protocol.VoiceMatch{Distance: protocol.NoDistance})
	}
	if got.err != nil {
		e.m.Hearing.WithLabelValues("voice_error").Inc()
		e.voiceFailed("the embedding failed", got.err)
		return v.enrolled(text, nil, at, &protocol.VoiceMatch{Distance: protocol.NoDistance})
	}
	return v.enrolled(text, got.vec, at, v.match(got.vec))
}

func (e *Ear) voiceFailed(what string, err error) {
	v := e.cfg.Voice
	v.mu.Lock()
	say := time.Since(v.failLog) > time.Minute
	if say {
		v.failLog = time.Now()
	}
	v.mu.Unlock()
	if say {
		e.log.Warn("who is speaking: "+what+"; the voice is unknown (said once a minute)", "service", v.Embedder.Model(), "err", err)
	}
}

// match is whose voiceprint vec is nearest, within Threshold.
func (v *Voice) match(vec []float32) *protocol.VoiceMatch {
	person, d := v.Prints.Match(vec)
	if person == "" || d > v.Threshold {
		return &protocol.VoiceMatch{Distance: d}
	}
	return &protocol.VoiceMatch{Person: person, Distance: d, Sure: d <= v.Sure}
}

// enrolled takes the utterance into an enrolment by voice: a request
// starts one (for the identity its name is among People), and each later
// utterance of the same voice within enrolFor adds to it, until Enrol
// utterances make the voiceprint. It returns m with the enrolment's state
// when the utterance was part of one.
func (v *Voice) enrolled(text string, vec []float32, at time.Time, m *protocol.VoiceMatch) *protocol.VoiceMatch {
	if v.People == nil {
		return m
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if name, ok := memory.EnrolName(text); ok {
		name = clip(name, protocol.MaxEnrolName)
		person := v.person(name)
		switch {
		case name == "" || person == "":
			v.pending = nil
			if name == "" {
				name = "?" // the request gave none
			}
			m.Enrol = &protocol.Enrolment{Name: name, Need: v.Enrol}
		case vec == nil:
			v.pending = nil
			m.Enrol = &protocol.Enrolment{Name: name, Person: person, Need: v.Enrol}
		case v.Prints.Knows(person) && (m.Person != person || !m.Sure):
			// Once enrolled, a voice is theirs: another may not take it over
			// by saying their name.
			v.pending = nil
			m.Enrol = &protocol.Enrolment{Name: name, Person: person, Need: v.Enrol, Taken: true}
		default:
			v.pending = &enrolment{name: name, person: person, vecs: [][]float32{vec}, last: at}
			m.Enrol = &protocol.Enrolment{Name: name, Person: person, Got: 1, Need: v.Enrol}
			if v.Enrol == 1 {
				v.complete(m, at)
			}
		}
		return m
	}
	p := v.pending
	if p == nil || vec == nil {
		return m
	}
	if at.Sub(p.last) > enrolFor {
		v.pending = nil
		return m
	}
	if memory.CosineDistance(mean(p.vecs), vec) > v.Threshold {
		return m // another voice: not part of it
	}
	p.vecs, p.last = append(p.vecs, vec), at
	m.Enrol = &protocol.Enrolment{Name: p.name, Person: p.person, Got: len(p.vecs), Need: v.Enrol}
	if len(p.vecs) >= v.Enrol {
		v.complete(m, at)
	}
	return m
}

// complete writes the pending enrolment's voiceprint (replacing the
// person's old one) and says so in m; a write that fails leaves the
// enrolment unfinished (Got 0: the robot asks again).
func (v *Voice) complete(m *protocol.VoiceMatch, at time.Time) {
	p := v.pending
	v.pending = nil
	if _, err := v.Prints.Forget(p.person, time.Time{}); err == nil {
		if err = v.Prints.Add(p.person, v.Embedder.Model(), at, p.vecs...); err == nil {
			*m = *v.match(p.vecs[len(p.vecs)-1])
			m.Enrol = &protocol.Enrolment{Name: p.name, Person: p.person, Got: len(p.vecs), Need: v.Enrol}
			return
		}
	}
	m.Enrol = &protocol.Enrolment{Name: p.name, Person: p.person, Need: v.Enrol}
}

// person is the identity among People that name names, or "".
func (v *Voice) person(name string) string {
	for id, names := range v.People {
		if strings.EqualFold(id, name) {
			return id
		}
		for _, n := range names {
			if strings.EqualFold(n, name) {
				return id
			}
		}
	}
	return ""
}

func mean(vecs [][]float32) []float64 {
	m := make([]float64, len(vecs[0]))
	for _, v := range vecs {
		for i := range min(len(m), len(v)) {
			m[i] += float64(v[i])
		}
	}
	return m
}

// voiceOf is a report's voice for the log: the person and distance,
// "unknown", or "" when the ear does not identify voices.
func voiceOf(m *protocol.VoiceMatch) string {
	switch {
	case m == nil:
		return ""
	case m.Person == "" && m.Distance >= 0:
		return fmt.Sprintf("unknown (nearest %.2f)", m.Distance)
	case m.Person == "":
		return "unknown"
	case m.Sure:
		return m.Person + fmt.Sprintf(" (%.2f, sure)", m.Distance)
	}
	return m.Person + fmt.Sprintf(" (%.2f)", m.Distance)
}
