package hearing

import (
	"slices"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Whose voice (docs/hearing.md, "Who is speaking"). Robots that identify
// voices say in each transcript whose voice it is, by their own
// voiceprints. The arbiter publishes the Message under the person when
// a robot that heard the utterance knows the voice as one of the room's
// people (Config.People): the nearest match among the reports wins. It
// is sure — the robots answer the person with what they remember of
// them — only when that report was sure and no report named someone
// else. An utterance no robot knew (or none could tell: the service
// down) is the hearing user's, marked unknown: nobody's facts.

// speaker is who said an utterance, by its reports: the person (or ""
// for the hearing user), the metadata's reading and distance, and the
// enrolment it was part of; identified false when no report said
// anything of the voice (no robot identifies voices).
type speaker struct {
	person     string
	reading    string // protocol.VoiceSure, VoiceUnsure, VoiceUnknown
	distance   float64
	enrol      *protocol.Enrolment
	identified bool
}

func (a *Arbiter) speaker(reports []protocol.Heard, taken protocol.Heard) speaker {
	var s speaker
	var best *protocol.VoiceMatch
	named := map[string]bool{}
	for _, r := range reports {
		v := r.Voice
		if v == nil {
			continue
		}
		s.identified = true
		if v.Enrol != nil && (s.enrol == nil || r.ID == taken.ID) {
			e := *v.Enrol
			if e.Person != "" && !slices.Contains(a.cfg.People, e.Person) {
				e.Person, e.Got = "", 0 // nobody the room may know: refused
			}
			s.enrol = &e
		}
		if v.Person == "" || !slices.Contains(a.cfg.People, v.Person) {
			if v.Person != "" {
				a.m.Heard.WithLabelValues("voice_not_a_person").Inc()
			}
			continue
		}
		named[v.Person] = true
		if best == nil || v.Distance < best.Distance {
			best = v
		}
	}
	if !s.identified {
		return s
	}
	if best == nil {
		s.reading = protocol.VoiceUnknown
		return s
	}
	s.person, s.distance, s.reading = best.Person, best.Distance, protocol.VoiceUnsure
	if best.Sure && len(named) == 1 {
		s.reading = protocol.VoiceSure
	}
	return s
}

// voiceReading is what the reports say of the voice, for the log.
func voiceReading(reports []protocol.Heard) string {
	out := ""
	for _, r := range reports {
		if r.Voice == nil {
			continue
		}
		p := r.Voice.Person
		if p == "" {
			p = "unknown"
		}
		if out != "" {
			out += " "
		}
		out += r.From + ":" + p
	}
	return out
}
