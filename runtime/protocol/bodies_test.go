package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The query and result bodies join TestGolden's and the fuzzers' table.
func init() {
	decoders["speak"] = func(b []byte) (any, error) { return DecodeSpeakRequest(b, 0) }
	decoders["speak-result"] = func(b []byte) (any, error) { return DecodeSpeakResult(b, 0) }
	decoders["speak-start"] = func(b []byte) (any, error) { return DecodeSpeakStart(b, 0) }
	decoders["speak-start-result"] = func(b []byte) (any, error) { return DecodeSpeakStartResult(b, 0) }
	decoders["speak-stop"] = func(b []byte) (any, error) { return DecodeSpeakStop(b, 0) }
	decoders["speak-stop-result"] = func(b []byte) (any, error) { return DecodeSpeakStopResult(b, 0) }
	decoders["speak-more"] = func(b []byte) (any, error) { return DecodeSpeakMore(b, 0) }
	decoders["speak-more-result"] = func(b []byte) (any, error) { return DecodeSpeakMoreResult(b, 0) }
	decoders["vision"] = func(b []byte) (any, error) { return DecodeVisionRequest(b, 0) }
	decoders["vision-result"] = func(b []byte) (any, error) { return DecodeVisionResult(b, 0) }
	decoders["phase-command"] = func(b []byte) (any, error) { return DecodePhaseCommand(b, 0) }
	decoders["cancel"] = func(b []byte) (any, error) { return DecodeQueryCancel(b, 0) }
}

func FuzzDecodeSpeakRequest(f *testing.F)     { fuzzDecoder(f, "speak") }
func FuzzDecodeSpeakResult(f *testing.F)      { fuzzDecoder(f, "speak-result") }
func FuzzDecodeSpeakStart(f *testing.F)       { fuzzDecoder(f, "speak-start") }
func FuzzDecodeSpeakStartResult(f *testing.F) { fuzzDecoder(f, "speak-start-result") }
func FuzzDecodeSpeakStop(f *testing.F)        { fuzzDecoder(f, "speak-stop") }
func FuzzDecodeSpeakStopResult(f *testing.F)  { fuzzDecoder(f, "speak-stop-result") }
func FuzzDecodeSpeakMore(f *testing.F)        { fuzzDecoder(f, "speak-more") }
func FuzzDecodeSpeakMoreResult(f *testing.F)  { fuzzDecoder(f, "speak-more-result") }
func FuzzDecodeVisionRequest(f *testing.F)    { fuzzDecoder(f, "vision") }
func FuzzDecodeVisionResult(f *testing.F)     { fuzzDecoder(f, "vision-result") }
func FuzzDecodePhaseCommand(f *testing.F)     { fuzzDecoder(f, "phase-command") }
func FuzzDecodeQueryCancel(f *testing.F)      { fuzzDecoder(f, "cancel") }

// What the three old readers of a speak result let through and the
// strict decoder does not (they ignored json.Unmarshal's error, so each of
// these became a zero result): a wrong type, a field name in another case
// (encoding/json folds case), an unknown field, trailing data.
func TestSpeakResultIsStrictWhereTheCopiesWereNot(t *testing.T) {
	for _, c := range []struct {
		name, in, field string
		kind            Kind
	}{
		{"duration as a string", `{"durationMs":"2311"}`, "durationMs", KindInvalid},
		{"case-folded name", `{"DurationMs":2311}`, "DurationMs", KindUnknownField},
		{"unknown field", `{"durationMs":1,"ok":true}`, "ok", KindUnknownField},
		{"trailing data", `{"durationMs":1}{}`, "", KindSyntax},
		{"not an object", `"done"`, "", KindInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeSpeakResult([]byte(c.in), 0)
			var pe *Error
			if !errors.As(err, &pe) || pe.Field != c.field || pe.Kind != c.kind {
				t.Fatalf("%s: %v, want field %q kind %q", c.in, err, c.field, c.kind)
			}
		})
	}
	r, err := DecodeSpeakResult([]byte(`{}`), 0) // aikyo's bodies answer a speak with {}
	if err != nil || r != (SpeakResult{}) {
		t.Fatalf("aikyo's empty speak result: %+v %v", r, err)
	}
}

// device/speak decoded its request with encoding/json, which matches field
// names in any case and ignores what follows the first value: {"MESSAGE":
// "hi"} was spoken, and so was a body with a second object after it. Both
// are refused now, naming the field.
func TestSpeakRequestFieldNamesAreExact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"MESSAGE":"hi"}`, "protocol: speak: MESSAGE: unknown field"},
		{`{"message":"hi"} {"message":"again"}`, "protocol: speak: trailing data after the JSON value"},
		{`{"message":"hi","hold":"` + strings.Repeat("x", MaxHoldLen+1) + `"}`, "protocol: speak: hold: must be at most 64 bytes, got 65"},
	} {
		if _, err := DecodeSpeakRequest([]byte(c.in), 0); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestBargeInModes(t *testing.T) {
	for _, b := range []BargeIn{BargeInSentence, BargeInImmediate, BargeInOff} {
		if !b.Valid() {
			t.Errorf("%q not valid", b)
		}
	}
	for _, b := range []BargeIn{"", "later", "Sentence"} {
		if b.Valid() {
			t.Errorf("%q valid", b)
		}
	}
	// A speak.stop stops at a sentence or at once; "off" is no place to stop.
	if _, err := DecodeSpeakStop([]byte(`{"at":"off"}`), 0); KindOf(err) != KindInvalid {
		t.Fatalf("speak.stop at off: %v", err)
	}
}

func TestSpeechEstimate(t *testing.T) {
	for _, c := range []struct {
		text, lang string
		want       time.Duration
	}{
		{"", "en", time.Second},
		{"Hello", "en", time.Second + 5*90*time.Millisecond},
		{"こんにちは", "ja", time.Second + 5*200*time.Millisecond}, // characters, not bytes
		{"こんにちは", "en", time.Second + 5*90*time.Millisecond},
	} {
		if got := SpeechEstimate(c.text, c.lang); got != c.want {
			t.Errorf("SpeechEstimate(%q, %q) = %v, want %v", c.text, c.lang, got, c.want)
		}
	}
}

// Bodies built in code pass the decoders they will meet.
func TestBuiltBodiesValidate(t *testing.T) {
	if err := (SpeakRequest{Message: "hi", Emotion: EmotionSad, Hold: "t", MessageID: NewID()}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (SpeakRequest{Message: "hi", Emotion: "smug"}).Validate(); KindOf(err) != KindInvalid {
		t.Fatalf("bad emotion: %v", err)
	}
}

// A speak that is still being written names the speak its appends go to,
// and each append its place: the errors name the field.
func TestSpeakMore(t *testing.T) {
	if _, err := DecodeSpeakRequest([]byte(`{"message":"One.","more":true}`), 0); err == nil || err.Error() != "protocol: speak: messageId: required with more, the speak that speak.more appends to" {
		t.Fatalf("more without a messageId: %v", err)
	}
	if r, err := DecodeSpeakRequest([]byte(`{"message":"One.","more":true,"messageId":"m1"}`), 0); err != nil || !r.More {
		t.Fatalf("more: %+v %v", r, err)
	}
	for _, c := range []struct {
		name  string
		in    SpeakMore
		field string
		kind  Kind
	}{
		{"append", SpeakMore{MessageID: "m1", Seq: 1, Message: "Two.", More: true}, "", ""},
		{"last words", SpeakMore{MessageID: "m1", Seq: 2, Message: "Three."}, "", ""},
		{"end mark", SpeakMore{MessageID: "m1", Seq: MaxSpeakMoreSeq}, "", ""},
		{"no messageId", SpeakMore{Seq: 1, Message: "Two."}, "messageId", KindMissing},
		{"long messageId", SpeakMore{MessageID: strings.Repeat("m", MaxIDLen+1), Seq: 1, Message: "Two."}, "messageId", KindInvalid},
		{"no seq", SpeakMore{MessageID: "m1", Message: "Two."}, "seq", KindMissing},
		{"negative seq", SpeakMore{MessageID: "m1", Seq: -3, Message: "Two."}, "seq", KindInvalid},
		{"seq past the bound", SpeakMore{MessageID: "m1", Seq: MaxSpeakMoreSeq + 1, Message: "Two."}, "seq", KindInvalid},
		{"empty with more", SpeakMore{MessageID: "m1", Seq: 1, More: true}, "message", KindMissing},
		{"blank with more", SpeakMore{MessageID: "m1", Seq: 1, Message: " \n", More: true}, "message", KindMissing},
		{"not UTF-8", SpeakMore{MessageID: "m1", Seq: 1, Message: "\xff\xfe"}, "message", KindInvalid},
		{"the emotion, known late", SpeakMore{MessageID: "m1", Seq: 2, Emotion: EmotionSad}, "", ""},
		{"an emotion not known", SpeakMore{MessageID: "m1", Seq: 2, Emotion: "gloomy"}, "emotion", KindInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.in.Validate()
			var pe *Error
			if c.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &pe) || pe.Field != c.field || pe.Kind != c.kind {
				t.Fatalf("%+v: %v, want field %q kind %q", c.in, err, c.field, c.kind)
			}
		})
	}
	for _, c := range []struct{ in, want string }{
		{`{"messageId":"m1","seq":1,"message":"Two.","more":true}`, ""},
		{`{"messageId":"m1","seq":2}`, ""},
		{`{"messageId":"m1","seq":1.5,"message":"Two."}`, "protocol: speak-more: seq: must be a number, got JSON number"},
		{`{"messageId":"m1","seq":1,"message":"Two.","emotion":"sad"}`, ""},
		{`{"messageId":"m1","seq":1,"message":"Two.","emotion":7}`, "protocol: speak-more: emotion: must be a string, got JSON number"},
		{`{"messageId":"m1","seq":1,"message":"Two.","hold":"t1"}`, "protocol: speak-more: hold: unknown field"},
		{`{"messageId":"m1","seq":1} {}`, "protocol: speak-more: trailing data after the JSON value"},
		{`[]`, "protocol: speak-more: must be a JSON object"},
	} {
		_, err := DecodeSpeakMore([]byte(c.in), 0)
		if (c.want == "" && err != nil) || (c.want != "" && (err == nil || err.Error() != c.want)) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	if r, err := DecodeSpeakMoreResult([]byte(`{"appended":false}`), 0); err != nil || r.Appended {
		t.Fatalf("result: %+v %v", r, err)
	}
	if _, err := DecodeSpeakMoreResult([]byte(`{}`), 0); KindOf(err) != KindMissing {
		t.Fatalf("a result without appended: %v", err)
	}
}
