package protocol

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .golden files of testdata/")

// decoders maps each testdata folder to its decoder, returning the value
// re-encoded canonically.
var decoders = map[string]func([]byte) (any, error){
	"message":       func(b []byte) (any, error) { return DecodeMessage(b, 0) },
	"state":         func(b []byte) (any, error) { return DecodeState(b, 0) },
	"grant":         func(b []byte) (any, error) { return DecodeTurnGrant(b, 0) },
	"presence":      func(b []byte) (any, error) { return DecodePresence(b, 0) },
	"query":         func(b []byte) (any, error) { return DecodeQuery(b, 0) },
	"result":        func(b []byte) (any, error) { return DecodeQueryResult(b, 0) },
	"phase":         func(b []byte) (any, error) { return DecodePhase(b, 0) },
	"post":          func(b []byte) (any, error) { return DecodePost(b, 0) },
	"postack":       func(b []byte) (any, error) { return DecodePostAck(b, 0) },
	"hold":          func(b []byte) (any, error) { return DecodeHold(b, 0) },
	"speaking":      func(b []byte) (any, error) { return DecodeSpeaking(b, 0) },
	"heard":         func(b []byte) (any, error) { return DecodeHeard(b, 0) },
	"forgot":        func(b []byte) (any, error) { return DecodeForgot(b, 0) },
	"shared":        func(b []byte) (any, error) { return DecodeShared(b, 0) },
	"forget-log":    func(b []byte) (any, error) { return DecodeForgetLog(b, 0) },
	"memory":        func(b []byte) (any, error) { return DecodeMemoryRequest(b, 0) },
	"memory-answer": func(b []byte) (any, error) { return DecodeMemoryAnswer(b, 0) },
}

// TestGolden decodes every testdata/<type>/<case>.json and compares the
// outcome (the canonical re-encoding, or the error) with <case>.golden.
// Run with -update to rewrite the golden files after a deliberate change.
func TestGolden(t *testing.T) {
	for typ, decode := range decoders {
		files, err := filepath.Glob(filepath.Join("testdata", typ, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden inputs for %s", typ)
		}
		for _, f := range files {
			t.Run(typ+"/"+filepath.Base(f), func(t *testing.T) {
				in, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var got string
				v, err := decode(in)
				if err != nil {
					got = "error: " + err.Error() + "\nkind: " + string(KindOf(err)) + "\n"
				} else {
					b, _ := json.MarshalIndent(v, "", "  ")
					got = string(b) + "\n"
				}
				golden := strings.TrimSuffix(f, ".json") + ".golden"
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s:\ngot:\n%s\nwant:\n%s", f, got, want)
				}
			})
		}
	}
}

func TestErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		field string
		kind  Kind
	}{
		{"importance over 10", `{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":10.5,"selected":false}}`, "params.importance", KindInvalid},
		{"unknown field", `{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":1,"selected":false,"x":1}}`, "params.x", KindUnknownField},
		{"wrong type", `{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":1,"selected":"yes"}}`, "params.selected", KindInvalid},
		{"empty from", `{"jsonrpc":"2.0","method":"state.send","params":{"from":"","messageId":"m","state":"speak","importance":1,"selected":false}}`, "params.from", KindMissing},
		{"wrong jsonrpc", `{"jsonrpc":"2","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":1,"selected":false}}`, "jsonrpc", KindInvalid},
		{"bad closing", `{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":1,"selected":false,"closing":"later"}}`, "params.closing", KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeState([]byte(tt.in), 0)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if pe.Field != tt.field || pe.Kind != tt.kind {
				t.Fatalf("field %q kind %q, want %q %q (%v)", pe.Field, pe.Kind, tt.field, tt.kind, err)
			}
		})
	}
}

// A wrong type is named as the JSON the sender wrote, not as the decoder
// quoted it.
func TestWrongTypeNamesWhatWasSent(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{`5`, "must be a string, got JSON number"},
		{`-1.5`, "must be a string, got JSON number"},
		{`true`, "must be a string, got JSON boolean"},
		{`[1]`, "must be a string, got JSON array"},
		{`{"a":1}`, "must be a string, got JSON object"},
	} {
		_, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":`+tt.value+`,"from":"user","message":"hi"}}`), 0)
		if err == nil || !strings.Contains(err.Error(), "params.id: "+tt.want) {
			t.Errorf("id %s: %v, want %q", tt.value, err, tt.want)
		}
	}
	_, err := DecodeState([]byte(`{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"speak","importance":"high","selected":false}}`), 0)
	if err == nil || !strings.Contains(err.Error(), "got JSON string") {
		t.Errorf("importance as a string: %v", err)
	}
}

func TestSizeCap(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"message.send","params":{"id":"m","from":"u","to":[],"message":"` + strings.Repeat("x", 2000) + `"}}`
	if _, err := DecodeMessage([]byte(big), 1024); KindOf(err) != KindOversize {
		t.Fatalf("2 KB message under a 1 KB cap: %v, want oversize", err)
	}
	if _, err := DecodeMessage([]byte(big), 4096); err != nil {
		t.Fatalf("2 KB message under a 4 KB cap: %v", err)
	}
	huge := make([]byte, DefaultMaxBytes+1)
	if _, err := DecodeState(huge, 0); KindOf(err) != KindOversize {
		t.Fatalf("default cap not applied: %v", err)
	}
}

func TestClosingDefaultsToNone(t *testing.T) {
	s, err := DecodeState([]byte(`{"jsonrpc":"2.0","method":"state.send","params":{"from":"a","messageId":"m","state":"listen","importance":0,"selected":false}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Params.Closing != ClosingNone {
		t.Fatalf("closing = %q, want none", s.Params.Closing)
	}
}

func TestBuiltValuesRoundTrip(t *testing.T) {
	m := NewMessage("m1", "kyoko", nil, "やあ", EmotionHappy)
	b, _ := json.Marshal(m)
	got, err := DecodeMessage(b, 0)
	if err != nil || got.Params.Emotion() != EmotionHappy || got.Params.To == nil {
		t.Fatalf("message round trip: %+v %v", got, err)
	}
	st := NewState(StateParams{From: "kyoko", MessageID: "m1", State: Speak, Importance: 5})
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	sp := "kyoko"
	g := TurnGrant{From: "floor", MessageID: "m1", Speaker: &sp, Reason: ReasonSpeak, DecidedBy: DecidedAllVoted, Votes: []Vote{VoteOf(st.Params)}}
	b, _ = json.Marshal(g)
	if got, err := DecodeTurnGrant(b, 0); err != nil || got.SpeakerID() != "kyoko" {
		t.Fatalf("grant round trip: %+v %v", got, err)
	}
}

func TestValidIdentity(t *testing.T) {
	for _, ok := range []string{"kyoko", "companion_kyoko", "pi5-robot.1", "きょうこ"} {
		if why := ValidIdentity(ok); why != "" {
			t.Errorf("ValidIdentity(%q) = %q", ok, why)
		}
	}
	for _, bad := range []string{"", "a/b", "a+b", "a#", "$SYS", "a b", "a\x00", strings.Repeat("a", 65)} {
		if ValidIdentity(bad) == "" {
			t.Errorf("ValidIdentity(%q) accepted", bad)
		}
	}
}

func TestQueryIDOf(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxBytes+10)
	for _, c := range []struct {
		name, in, want string
	}{
		{"valid", `{"jsonrpc":"2.0","method":"query.send","id":"q1","params":{"from":"a","type":"speak"}}`, "q1"},
		{"oversize body", `{"jsonrpc":"2.0","method":"query.send","id":"q2","params":{"from":"a","type":"speak","body":{"message":"` + big + `"}}}`, "q2"},
		{"id after the body", `{"params":{"type":""},"id":"q3"}`, "q3"},
		{"bad other field", `{"jsonrpc":2,"id":"q4"}`, "q4"},
		{"no id", `{"jsonrpc":"2.0"}`, ""},
		{"empty id", `{"id":""}`, ""},
		{"id not a string", `{"id":7}`, ""},
		{"not JSON", `id=q5`, ""},
		{"id too long", `{"id":"` + strings.Repeat("a", MaxIDLen+1) + `"}`, ""},
	} {
		if got := QueryIDOf([]byte(c.in)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
