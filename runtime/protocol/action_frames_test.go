package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The action frames join TestGolden's and the fuzzers' table.
func init() {
	decoders["action-declaration"] = func(b []byte) (any, error) { return DecodeActionDeclaration(b, 0) }
	decoders["action-send"] = func(b []byte) (any, error) { return DecodeActionSend(b, 0) }
}

func FuzzDecodeActionDeclaration(f *testing.F) { fuzzDecoder(f, "action-declaration") }
func FuzzDecodeActionSend(f *testing.F)        { fuzzDecoder(f, "action-send") }

// A declaration of more than MaxActions is refused by its count, not by
// its size; one over the byte cap by its size.
func TestActionDeclarationBounds(t *testing.T) {
	list := func(n int) string {
		var defs []string
		for i := range n {
			defs = append(defs, fmt.Sprintf(`{"name":"a%d","description":"d","schema":{"type":"object"}}`, i))
		}
		return `{"actions":[` + strings.Join(defs, ",") + `]}`
	}
	if d, err := DecodeActionDeclaration([]byte(list(MaxActions)), 0); err != nil || len(d.Actions) != MaxActions || d.Delivery != DeliveryQuery {
		t.Fatalf("%d actions: %+v %v", MaxActions, d, err)
	}
	_, err := DecodeActionDeclaration([]byte(list(MaxActions+1)), 0)
	if err == nil || !strings.Contains(err.Error(), "at most 32 actions, got 33") {
		t.Fatalf("33 actions: %v", err)
	}
	huge := `{"actions":[` + strings.Repeat(`{"name":"x","description":"d","schema":{"type":"object"}},`, 20000) + `]}`
	if _, err := DecodeActionDeclaration([]byte(huge), 0); KindOf(err) != KindOversize {
		t.Fatalf("a %d-byte declaration: %v", len(huge), err)
	}
}

// NewActionSend carries the request's arguments, {} when it has none, and
// decodes back as it was made.
func TestNewActionSend(t *testing.T) {
	for _, args := range []string{`{"hand":"left"}`, ``, `null`} {
		a := NewActionSend("bot", ActionRequest{Name: "wave", Args: json.RawMessage(args), MessageID: "m1"})
		b, _ := json.Marshal(a)
		got, err := DecodeActionSend(b, 0)
		if err != nil {
			t.Fatalf("args %q: %s: %v", args, b, err)
		}
		want := args
		if want == "" || want == "null" {
			want = "{}"
		}
		if got.Params.From != "bot" || got.Params.Name != "wave" || string(got.Params.Params) != want {
			t.Fatalf("args %q: %s", args, b)
		}
	}
}
