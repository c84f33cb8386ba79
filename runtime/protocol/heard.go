package protocol

import (
	"math"
	"time"
	"unicode/utf8"
)

// Hearing (docs/protocol.md, "Heard reports"): every device whose microphone heard a
// person reports it on its own heard/{companion} topic; the room's floor
// picks one report per utterance and publishes the Message as the
// person's identity, with the metadata below.

// Heard is one device's report of a person's utterance: when it was
// spoken by that device's clock, what its speech-to-text engine made of
// it, how sure the engine was and how loud it was at that microphone.
type Heard struct {
	From string `json:"from"` // the companion whose body heard
	ID   string `json:"id"`   // the report's id: a receiver acts once per id
	// Device is the body that heard.
	Device string    `json:"device"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Text   string    `json:"text"`
	// Confidence is the engine's, from 0 to 1, or -1 when it gives none.
	Confidence float64 `json:"confidence"`
	// Level is the utterance's loudness at this microphone (RMS, dBFS:
	// from -120 to 0): the closest robot hears it loudest.
	Level float64 `json:"level"`
	// Wake says Text is a wake word a wake-word detector heard (its
	// name), not a transcript.
	Wake bool `json:"wake,omitempty"`
	// Utterance names the utterance the report is about: its open report,
	// then its transcript or its drop, carry the same (each report has an
	// ID of its own). Empty in a report of an older sender.
	Utterance string `json:"utterance,omitempty"`
	// State is what the report says of the utterance: "" its transcript
	// (Text); HeardOpen a person started speaking and still does (no Text,
	// End is Start); HeardDropped it ended without a transcript (no Text);
	// HeardTentative the person has paused and their words so far (Text,
	// the recogniser's hypothesis; End is where the speech stopped) may be
	// the sentence: the room may think on them, never answer them;
	// HeardResumed the person went on after a tentative report (no Text):
	// the thinks on it are void; HeardPartial the recogniser's newest
	// hypothesis while the person speaks (Text, growing; End is when it
	// came): captions only — nobody thinks on them, and the room's floor
	// forwards the newest of the utterance under way on the person's own
	// heard topic (docs/hearing.md). While a person's utterance is open (until
	// its transcript or drop), no robot starts speaking, and one that has
	// just started yields (docs/hearing.md).
	State string `json:"state,omitempty"`
	// Voice is whose voice the utterance is, by this robot's voiceprints
	// (docs/hearing.md, "Who is speaking"): only in a transcript, and
	// only from a robot that identifies voices; nil otherwise.
	Voice *VoiceMatch `json:"voice,omitempty"`
}

// VoiceMatch is a robot's reading of who spoke an utterance.
type VoiceMatch struct {
	// Person is the enrolled person whose voiceprint is nearest, within
	// the robot's threshold; "" an unknown voice (or none could be
	// computed: Distance is then -1).
	Person string `json:"person,omitempty"`
	// Distance is the cosine distance (0 to 2) from the utterance's
	// embedding to the nearest voiceprint; -1 when there was no embedding
	// (the service down or late) or no voiceprint.
	Distance float64 `json:"distance"`
	// Sure says Distance is within the robot's stricter threshold: only
	// then is the person answered with what the robot remembers of them.
	Sure bool `json:"sure,omitempty"`
	// Enrol, when the utterance is part of a person's enrolment by voice
	// ("remember my voice, I'm Alice"), says how far it is.
	Enrol *Enrolment `json:"enrol,omitempty"`
}

// Enrolment is the state of an enrolment by voice after an utterance.
type Enrolment struct {
	// Name is the name the person gave, as heard.
	Name string `json:"name"`
	// Person is the identity that name is in the room's hearing.people;
	// "" when it is nobody's there: the enrolment is refused.
	Person string `json:"person,omitempty"`
	// Got is how many utterances of the voice the robot has; Need how
	// many make its voiceprint. Got == Need: enrolled.
	Got  int `json:"got"`
	Need int `json:"need"`
	// Taken says Person has a voiceprint already and this voice is not
	// surely theirs: refused (they re-enrol by their own voice, or an
	// operator does).
	Taken bool `json:"taken,omitempty"`
}

// NoDistance is a VoiceMatch's Distance when there was nothing to compare.
const NoDistance = -1.0

// Bounds of a VoiceMatch.
const (
	MaxEnrolName = 64 // characters
	MaxEnrolNeed = 20 // utterances
)

// States of a Heard report besides a transcript's.
const (
	HeardOpen      = "open"
	HeardDropped   = "dropped"
	HeardTentative = "tentative"
	HeardResumed   = "resumed"
	HeardPartial   = "partial"
)

// heardWithText reports whether a report of state carries words: a
// transcript, a tentative or a partial report.
func heardWithText(state string) bool {
	return state == "" || state == HeardTentative || state == HeardPartial
}

// Bounds of a Heard report.
const (
	MaxHeardText     = 2000             // characters: about two minutes of speech
	MaxUtterance     = 10 * time.Minute // start to end
	MinLevel         = -120.0           // dBFS
	NoConfidence     = -1.0             // the engine gives no confidence
	DefaultHeardUser = "user"           // the person's identity when the config names none
	MetaSource       = "source"         // a heard Message's metadata: "voice"
	MetaHeardBy      = "heardBy"        // the companion whose report was taken
	MetaHeardDevices = "heardByAll"     // every companion that reported it in the window
	SourceVoice      = "voice"          // MetaSource of a Message heard by a microphone
	// MetaWake marks a heard Message that is a wake word: it opens the
	// room's ears and barges in on a robot that speaks; nobody answers it.
	MetaWake = "wake"
	// MetaVoice is a heard Message's reading of whose voice it is, when
	// the room's robots identify voices: VoiceSure (the Message is from
	// the person, who is answered with what the robots remember of
	// them), VoiceUnsure (from the person, answered without their
	// facts) or VoiceUnknown (from the hearing user: nobody's facts).
	MetaVoice = "voice"
	// MetaVoiceDistance is the cosine distance of the match (a number)
	// with MetaVoice sure or unsure.
	MetaVoiceDistance = "voiceDistance"
	// MetaVoiceEnrol is the enrolment by voice the Message is part of:
	// an object {name, person, got, need} (Enrolment).
	MetaVoiceEnrol = "voiceEnrol"
	VoiceSure      = "sure"
	VoiceUnsure    = "unsure"
	VoiceUnknown   = "unknown"
)

// Duration is how long the utterance lasted.
func (h Heard) Duration() time.Duration { return h.End.Sub(h.Start) }

// DecodeHeard decodes and validates a Heard report.
func DecodeHeard(b []byte, max int) (Heard, error) {
	var w struct {
		From       string   `json:"from"`
		ID         string   `json:"id"`
		Device     string   `json:"device"`
		Start      string   `json:"start"`
		End        string   `json:"end"`
		Text       *string  `json:"text"`
		Confidence *float64 `json:"confidence"`
		Level      *float64 `json:"level"`
		Wake       bool     `json:"wake"`
		Utterance  string   `json:"utterance"`
		State      string   `json:"state"`
		Voice      *struct {
			Person   string   `json:"person"`
			Distance *float64 `json:"distance"`
			Sure     bool     `json:"sure"`
			Enrol    *struct {
				Name   string `json:"name"`
				Person string `json:"person"`
				Got    int    `json:"got"`
				Need   int    `json:"need"`
				Taken  bool   `json:"taken"`
			} `json:"enrol"`
		} `json:"voice"`
	}
	if err := decodeStrict("heard", b, max, &w); err != nil {
		return Heard{}, err
	}
	c := checker{typ: "heard"}
	c.identity("from", w.From)
	c.id("id", w.ID)
	c.identity("device", w.Device)
	start := c.time("start", w.Start, true)
	end := c.time("end", w.End, true)
	if c.err == nil {
		switch d := end.Sub(start); {
		case d < 0:
			c.fail("end", KindInvalid, "must not be before start")
		case d > MaxUtterance:
			c.fail("end", KindInvalid, "an utterance of %s is longer than %s", d.Round(time.Second), MaxUtterance)
		}
	}
	switch w.State {
	case "":
		if w.Utterance != "" {
			c.id("utterance", w.Utterance)
		}
	case HeardOpen, HeardDropped, HeardResumed, HeardTentative, HeardPartial:
		c.id("utterance", w.Utterance)
		if !heardWithText(w.State) && w.Text != nil && *w.Text != "" {
			c.fail("text", KindInvalid, "must be empty in a report of state %q (a transcript has none)", w.State)
		}
		if w.Wake {
			c.fail("wake", KindInvalid, "a wake word's report has no state")
		}
	default:
		c.fail("state", KindInvalid, "must be %q, %q, %q, %q, %q or absent (a transcript), got %q", HeardOpen, HeardPartial, HeardTentative, HeardResumed, HeardDropped, w.State)
	}
	switch {
	case !heardWithText(w.State):
	case w.Text == nil:
		c.fail("text", KindMissing, "required, a string")
	case *w.Text == "":
		c.fail("text", KindMissing, "must not be empty: a report of nothing heard is not sent")
	case !utf8.ValidString(*w.Text):
		c.fail("text", KindInvalid, "must be valid UTF-8")
	case utf8.RuneCountInString(*w.Text) > MaxHeardText:
		c.fail("text", KindInvalid, "must be at most %d characters", MaxHeardText)
	}
	switch {
	case w.Confidence == nil:
		c.fail("confidence", KindMissing, "required, from 0 to 1, or -1")
	case math.IsNaN(*w.Confidence) || (*w.Confidence != NoConfidence && (*w.Confidence < 0 || *w.Confidence > 1)):
		c.fail("confidence", KindInvalid, "must be from 0 to 1, or -1 for none, got %v", *w.Confidence)
	}
	switch {
	case w.Level == nil:
		c.fail("level", KindMissing, "required, dBFS from -120 to 0")
	case math.IsNaN(*w.Level) || *w.Level < MinLevel || *w.Level > 0:
		c.fail("level", KindInvalid, "must be dBFS from -120 to 0, got %v", *w.Level)
	}
	var voice *VoiceMatch
	if v := w.Voice; v != nil {
		voice = &VoiceMatch{Person: v.Person, Sure: v.Sure}
		if w.State != "" || w.Wake {
			c.fail("voice", KindInvalid, "only a transcript says whose voice it is")
		}
		if v.Person != "" {
			c.identity("voice.person", v.Person)
		}
		switch {
		case v.Distance == nil:
			c.fail("voice.distance", KindMissing, "required: the cosine distance from 0 to 2, or -1")
		case math.IsNaN(*v.Distance) || (*v.Distance != NoDistance && (*v.Distance < 0 || *v.Distance > 2)):
			c.fail("voice.distance", KindInvalid, "must be from 0 to 2, or -1 for none, got %v", *v.Distance)
		default:
			voice.Distance = *v.Distance
			if v.Person != "" && *v.Distance == NoDistance {
				c.fail("voice.distance", KindInvalid, "a matched voice has a distance")
			}
		}
		if v.Sure && v.Person == "" {
			c.fail("voice.sure", KindInvalid, "an unknown voice is never sure")
		}
		if e := v.Enrol; e != nil {
			switch {
			case e.Name == "" || !utf8.ValidString(e.Name) || utf8.RuneCountInString(e.Name) > MaxEnrolName:
				c.fail("voice.enrol.name", KindInvalid, "must be 1 to %d characters of UTF-8", MaxEnrolName)
			case e.Need < 1 || e.Need > MaxEnrolNeed:
				c.fail("voice.enrol.need", KindInvalid, "must be from 1 to %d, got %d", MaxEnrolNeed, e.Need)
			case e.Got < 0 || e.Got > e.Need:
				c.fail("voice.enrol.got", KindInvalid, "must be from 0 to need (%d), got %d", e.Need, e.Got)
			}
			if e.Person != "" {
				c.identity("voice.enrol.person", e.Person)
			}
			if e.Taken && (e.Person == "" || e.Got != 0) {
				c.fail("voice.enrol.taken", KindInvalid, "a refusal names the person and has got 0")
			}
			voice.Enrol = &Enrolment{Name: e.Name, Person: e.Person, Got: e.Got, Need: e.Need, Taken: e.Taken}
		}
	}
	if err := c.done(); err != nil {
		return Heard{}, err
	}
	h := Heard{From: w.From, ID: w.ID, Device: w.Device, Start: start, End: end,
		Confidence: *w.Confidence, Level: *w.Level, Wake: w.Wake, Utterance: w.Utterance, State: w.State, Voice: voice}
	if w.Text != nil {
		h.Text = *w.Text
	}
	return h, nil
}
