package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// The knowledge frames join TestGolden's and the fuzzers' table.
func init() {
	decoders["knowledge-declaration"] = func(b []byte) (any, error) { return DecodeKnowledgeDeclaration(b, 0) }
	decoders["knowledge"] = func(b []byte) (any, error) { return DecodeKnowledgeRequest(b, 0) }
	decoders["knowledge-result"] = func(b []byte) (any, error) { return DecodeKnowledgeResult(b, 0) }
}

func FuzzDecodeKnowledgeDeclaration(f *testing.F) { fuzzDecoder(f, "knowledge-declaration") }
func FuzzDecodeKnowledgeRequest(f *testing.F)     { fuzzDecoder(f, "knowledge") }
func FuzzDecodeKnowledgeResult(f *testing.F)      { fuzzDecoder(f, "knowledge-result") }

// A declaration of more than MaxKnowledgeDefs is refused by its count,
// not by its size; one over the byte cap by its size.
func TestKnowledgeDeclarationBounds(t *testing.T) {
	list := func(n int) string {
		var defs []string
		for i := range n {
			defs = append(defs, fmt.Sprintf(`{"name":"k%d","description":"d","parameters":{"type":"object"}}`, i))
		}
		return `{"knowledge":[` + strings.Join(defs, ",") + `]}`
	}
	if d, err := DecodeKnowledgeDeclaration([]byte(list(MaxKnowledgeDefs)), 0); err != nil || len(d.Knowledge) != MaxKnowledgeDefs {
		t.Fatalf("%d tools: %+v %v", MaxKnowledgeDefs, d, err)
	}
	_, err := DecodeKnowledgeDeclaration([]byte(list(MaxKnowledgeDefs+1)), 0)
	if err == nil || !strings.Contains(err.Error(), "knowledge: at most 16 knowledge tools, got 17") {
		t.Fatalf("17 tools: %v", err)
	}
	huge := `{"knowledge":[` + strings.Repeat(`{"name":"x","description":"d","parameters":{"type":"object"}},`, 20000) + `]}`
	if _, err := DecodeKnowledgeDeclaration([]byte(huge), 0); KindOf(err) != KindOversize {
		t.Fatalf("a %d-byte declaration: %v", len(huge), err)
	}
}

// An answer is bounded in characters, not bytes: 2,000 Japanese
// characters are an answer, 2,001 are not.
func TestKnowledgeResultBound(t *testing.T) {
	ok := strings.Repeat("晴", MaxKnowledgeText)
	if r, err := DecodeKnowledgeResult([]byte(`{"text":"`+ok+`"}`), 0); err != nil || r.Text != ok {
		t.Fatalf("%d characters: %v", MaxKnowledgeText, err)
	}
	_, err := DecodeKnowledgeResult([]byte(`{"text":"`+ok+`晴"}`), 0)
	if KindOf(err) != KindOversize || !strings.Contains(err.Error(), "text: must be at most 2000 characters, got 2001") {
		t.Fatalf("2001 characters: %v", err)
	}
}
