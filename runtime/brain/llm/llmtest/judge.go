package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// JudgeSchema is the name of the repetition judge's structured output
// (runtime/brain/llm.JudgeRepetition).
const JudgeSchema = "repetition_judge"

// judge answers a repetition judge's request, in the real format: a JSON
// content string {"score": …}. It reports whether req was one.
func (s *Server) judge(w http.ResponseWriter, req request) bool {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil || req.ResponseFormat.JSONSchema.Name != JudgeSchema {
		return false
	}
	var prompt string
	for _, m := range req.Messages {
		if m.Role == "user" {
			if err := json.Unmarshal(m.Content, &prompt); err != nil {
				s.problem("repetition judge: user content is not a string: %v", err)
			}
		}
	}
	lines := quotedTexts(prompt)
	if len(lines) == 0 {
		s.problem("repetition judge: the prompt quotes no conversation")
	}
	s.mu.Lock()
	s.judged = append(s.judged, lines)
	fn := s.Judge
	s.mu.Unlock()
	time.Sleep(s.JudgeLatency)
	if s.JudgeFails {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
		return true
	}
	score := sameShare(lines)
	if fn != nil {
		score = fn(lines)
	}
	b, _ := json.Marshal(map[string]any{"score": score})
	s.answer(w, req, map[string]any{"role": "assistant", "content": string(b), "refusal": nil}, "stop")
	return true
}

// Judged lists the windows the repetition judge was asked about (their
// texts), in order.
func (s *Server) Judged() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.judged...)
}

// quotedTexts are the "text" fields of the JSON lines of a prompt.
func quotedTexts(prompt string) []string {
	var out []string
	for _, line := range strings.Split(prompt, "\n") {
		var q struct {
			From string `json:"from"`
			Text string `json:"text"`
		}
		if strings.HasPrefix(line, "{\"from\":") && json.Unmarshal([]byte(line), &q) == nil {
			out = append(out, q.Text)
		}
	}
	return out
}

// sameShare is the fake's default verdict: the share of lines that say,
// letters and digits only, what an earlier line of the window said.
func sameShare(lines []string) float64 {
	if len(lines) < 2 {
		return 0
	}
	seen := map[string]bool{}
	same := 0
	for _, l := range lines {
		k := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, l)
		if seen[k] {
			same++
		}
		seen[k] = true
	}
	return float64(same) / float64(len(lines)-1)
}
