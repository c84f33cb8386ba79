package llmtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// extract answers an extraction request (llm.Brain.Extract): known by its
// schema's name, or in JSON mode by its prompt's answer format. It reports
// whether req was one.
func (s *Server) extract(w http.ResponseWriter, req request) bool {
	var prompt string
	for _, m := range req.Messages {
		if m.Role == "user" {
			json.Unmarshal(m.Content, &prompt)
		}
	}
	named := req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil && req.ResponseFormat.JSONSchema.Name == llm.ExtractSchemaName
	if !named && !strings.Contains(prompt, `{"facts": []}`) {
		return false
	}
	in := extractInput(prompt)
	if len(in.Said) == 0 {
		s.problem("extraction: the prompt quotes nothing said")
	}
	s.mu.Lock()
	s.extracted = append(s.extracted, in)
	fn := s.Extract
	s.mu.Unlock()
	facts := []memory.Fact{}
	if fn != nil {
		facts = append(facts, fn(in)...)
	}
	type wire struct {
		Person     string `json:"person"`
		MessageID  string `json:"messageId"`
		Key        string `json:"key"`
		Text       string `json:"text"`
		Supersedes string `json:"supersedes"`
	}
	out := make([]wire, len(facts))
	for i, f := range facts {
		out[i] = wire{Person: f.Person, MessageID: f.MessageID, Key: f.Key, Text: f.Text, Supersedes: f.Supersedes}
	}
	b, _ := json.Marshal(map[string]any{"facts": out})
	time.Sleep(s.Latency)
	s.answer(w, req, map[string]any{"role": "assistant", "content": string(b), "refusal": nil}, "stop")
	return true
}

// Extracted are the extraction requests served, as the fake read them.
func (s *Server) Extracted() []brain.ExtractInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]brain.ExtractInput(nil), s.extracted...)
}

// extractInput reads back what an extraction prompt quotes: what people
// said ({"person","messageId","text"} lines) and the facts known ({"id",
// …} lines), and its language.
func extractInput(prompt string) brain.ExtractInput {
	in := brain.ExtractInput{Card: brain.Card{Language: "en"}}
	if strings.Contains(prompt, "あなたはコンパニオンロボット") {
		in.Card.Language = "ja"
	}
	for _, line := range strings.Split(prompt, "\n") {
		switch {
		case strings.HasPrefix(line, `{"person":`):
			var sd memory.Heard
			if json.Unmarshal([]byte(line), &sd) == nil {
				in.Said = append(in.Said, sd)
			}
		case strings.HasPrefix(line, `{"id":`):
			var f memory.Fact
			if json.Unmarshal([]byte(line), &f) == nil {
				in.Known = append(in.Known, f)
			}
		}
	}
	return in
}
