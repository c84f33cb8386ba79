// Package llmtest is a stand-in for a local model server (llama.cpp's
// OpenAI-compatible /v1/chat/completions): it checks the requests it gets,
// plays a plausible companion, and answers in the real response format
// after a configurable latency. Tests and benchmarks use it; no test needs
// the internet.
package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// Server is a fake OpenAI-compatible server.
type Server struct {
	*httptest.Server
	// Latency is added to every answer (a model's thinking time: its
	// time to the first token).
	Latency time.Duration
	// TokensPerSecond, when set, paces what the model writes: each
	// piece of about four characters (a token) takes its time, streamed
	// (stream true: chat.completion.chunk events as they are written) or
	// whole (the answer comes when the last would have).
	TokensPerSecond float64
	// ClosingAfter: from this many history lines on, the companions close.
	ClosingAfter int
	// Model is the model name requests must carry ("" accepts any).
	Model string
	// OnlyUsers makes the companions want to speak only after a user's
	// message, so each user message gets exactly one answer (benchmarks).
	// A user is "user", or one of Users.
	OnlyUsers bool
	Users     []string
	// Garbage makes every answer a well-formed completion whose content is
	// not the JSON asked for (a model that ignores the schema).
	Garbage bool
	// Line, when set, writes the companions' words (me, the turn); the
	// default is a short line naming both.
	Line func(me string, turn int) string
	// Speak, when set, is a companion's turn in a state answer: its
	// importance and its words, from its id, its card's language (en or
	// ja, as its system prompt is written) and the turn. It takes the
	// place of Line and of the default importance.
	Speak func(me, lang string, turn int) (importance float64, line string)
	// Wrote, when set, is called with the text of every companion state
	// the fake writes (its JSON), before it is paced out.
	Wrote func(answer string)
	// APIKey, when set, must come as "Authorization: Bearer <key>"; a
	// request without it is refused with 401 and an error quoting the key
	// it carried, as some proxies do (unkind to a client that logs it).
	APIKey string
	// Look makes a companion look through its vision tool (when offered)
	// before it thinks about a message, as a model with eyes would; the
	// pictures it is shown are kept (Images).
	Look bool
	// Judge, when set, is the model's verdict on a repetition judge's
	// window (the texts quoted in its prompt); the default is the share of
	// lines that say what an earlier one said. JudgeLatency delays the
	// verdict; JudgeFails answers it with a server error.
	Judge        func(lines []string) float64
	JudgeLatency time.Duration
	JudgeFails   bool
	// Gesture, when set and offered as a tool, is called with its words in
	// the response that drafts them (GestureArgs its arguments, default
	// {}), as a model with a body would.
	Gesture     string
	GestureArgs string
	// Act, when set, is a model that uses a tool that acts (an MCP
	// server's): see Act.
	Act *Act
	// Events, when set, are the card's event values the model judges
	// from the person's words (the user prompt), over a model with no
	// opinion's (false, "", the minimum).
	Events func(prompt string) map[string]any
	// Extract, when set, is the model's answer to an extraction request
	// (runtime/brain/llm.Brain.Extract): the facts it learns from what the
	// prompt quotes (ExtractInput rebuilt from the prompt, Card only its
	// language). Nil: no facts. The answer comes at the server's pace.
	Extract func(brain.ExtractInput) []memory.Fact

	extracted []brain.ExtractInput
	acted     int

	judged   [][]string
	prompts  []string // the user prompts of the companions' calls, in arrival order
	offered  []string // the tools of the latest state call
	calls    atomic.Int64
	streamed atomic.Int64
	images   []string
	mu       sync.Mutex
	problems []string
}

// Act is a model that uses a tool: when a call offers Tool and the
// person's words hold When, the model calls Tool with Args (JSON; "{}"
// when empty) before anything else, unless a tool turn already answers
// the call; then, in a call that writes the words (the speak tool), its
// words are Say of what the last tool turn said (also when the runtime
// ran the tool: a card's condition). In the call that votes it writes its
// state as usual once answered.
type Act struct {
	Tool, When, Args string
	Say              func(result string) string
	// AfterWords: in the call that votes, the model writes its state and
	// draft first and calls the tool after them, in the same answer (as
	// models that write text before a tool_use do).
	AfterWords bool
}

// Acted is how many times the model called Act.Tool.
func (s *Server) Acted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acted
}

// New starts a server; Close it when done.
func New() *Server {
	s := &Server{ClosingAfter: 4}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Listen starts a server on addr (host:port) instead of a free loopback
// port, as `chorus fakemodel` serves; Close it when done.
func Listen(addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ClosingAfter: 4}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.Server.Listener.Close()
	s.Server.Listener = l
	s.Server.Start()
	return s, nil
}

// URL of the API root, for brain.base_url.
func (s *Server) BaseURL() string { return s.Server.URL + "/v1" }

// Calls is the number of chat completions served.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Streamed is the number of answers served as streams.
func (s *Server) Streamed() int64 { return s.streamed.Load() }

// Prompts is the user prompt of every companion call so far (the message
// and what the companion is given with it: history, remembered facts),
// in arrival order.
func (s *Server) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.prompts)
}

// Problems lists what was wrong with the requests received.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Offered are the tools offered in the latest call that asked for a
// companion's state (the body's actions among them).
func (s *Server) Offered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.offered...)
}

// Images are the pictures the model was shown (data URLs), in order.
func (s *Server) Images() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.images...)
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

var idRe = regexp.MustCompile(`[（(]id: ([^)）]+)[)）]`)

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.problem("%s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); s.APIKey != "" && got != s.APIKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`, got)
		return
	}
	var req request
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err == nil && len(body) > maxRequest {
		s.problem("a request over %d bytes", maxRequest)
		refuse(w, http.StatusRequestEntityTooLarge, "request too large")
		return
	}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.problem("request is not JSON: %v", err)
		http.Error(w, "bad json", 400)
		return
	}
	s.calls.Add(1)
	if s.Model != "" && req.Model != s.Model {
		s.problem("model %q, want %q", req.Model, s.Model)
	}
	if s.judge(w, req) || s.extract(w, req) {
		return
	}
	if url, ok := imageIn(req); ok { // the vision tool: describe the picture
		if why := DataURLProblem(url); why != "" { // as the real API: a 400, and the picture is not seen
			s.problem("image: %s", why)
			refuse(w, http.StatusBadRequest, why)
			return
		}
		s.mu.Lock()
		s.images = append(s.images, url)
		s.mu.Unlock()
		s.answer(w, req, map[string]any{"role": "assistant", "content": "A colourful test picture.", "refusal": nil}, "stop")
		return
	}
	if len(req.Messages) < 2 || req.Messages[0].Role != "system" {
		s.problem("want a system message first, got %d messages", len(req.Messages))
		http.Error(w, "bad messages", 400)
		return
	}
	var system, user string
	json.Unmarshal(req.Messages[0].Content, &system)
	looked := false
	var toolSaid []string // what the tool turns say, in order
	for _, m := range req.Messages[1:] {
		switch m.Role {
		case "user":
			json.Unmarshal(m.Content, &user)
		case "tool":
			looked = true
			var text string
			json.Unmarshal(m.Content, &text)
			toolSaid = append(toolSaid, text)
		}
	}
	s.mu.Lock()
	s.prompts = append(s.prompts, user)
	s.mu.Unlock()
	me := "someone"
	if m := idRe.FindStringSubmatch(system); m != nil {
		me = m[1]
	}
	if strings.Contains(user, "realtime group chat") || strings.Contains(user, "リアルタイムのグループチャット") {
		s.talk(w, req, me, user)
		return
	}
	turn := historyLines(user)
	closing := "none"
	switch {
	case turn >= s.ClosingAfter+2:
		closing = "terminal"
	case turn == s.ClosingAfter+1:
		closing = "closing"
	case turn == s.ClosingAfter:
		closing = "pre-closing"
	}
	line := fmt.Sprintf("This is %s speaking, turn %d.", me, turn)
	importance := float64(len(me)%5 + 3)
	lang := "en"
	if strings.Contains(system, "あなたは") {
		lang = "ja"
	}
	switch {
	case s.Speak != nil:
		importance, line = s.Speak(me, lang, turn)
	case s.Line != nil:
		line = s.Line(me, turn)
	}
	if closing == "closing" {
		line = map[string]string{"en": "Thank you, this was fun!", "ja": "ありがとう、楽しかったです！"}[lang]
	}
	time.Sleep(s.Latency)

	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	offered := func(tool string) bool {
		for _, t := range req.Tools {
			if t.Function.Name == tool {
				return true
			}
		}
		return false
	}
	acts := s.Act != nil && offered(s.Act.Tool) && strings.Contains(user, s.Act.When)
	switch {
	case acts && len(toolSaid) == 0 && !(s.Act.AfterWords && req.ResponseFormat != nil): // the tool first, in any call that offers it
		args := s.Act.Args
		if args == "" {
			args = "{}"
		}
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
			"function": map[string]any{"name": s.Act.Tool, "arguments": args}}}
		finish = "tool_calls"
		s.mu.Lock()
		s.acted++
		s.mu.Unlock()
	case s.Act != nil && s.Act.Say != nil && len(toolSaid) > 0 && len(req.Tools) > 0 && (req.ResponseFormat == nil || req.ResponseFormat.Type != "json_schema"):
		line = s.Act.Say(toolSaid[len(toolSaid)-1]) // the words, from what the tool answered
		args, _ := json.Marshal(map[string]any{"message": line, "to": []string{}, "emotion": "neutral"})
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
			"function": map[string]any{"name": "speak", "arguments": string(args)}}}
		finish = "tool_calls"
	case s.Look && !looked && offered("vision"):
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
			"function": map[string]any{"name": "vision", "arguments": "{}"}}}
		finish = "tool_calls"
	case req.ResponseFormat != nil && req.ResponseFormat.Type == "json_schema":
		if req.ResponseFormat.JSONSchema == nil || req.ResponseFormat.JSONSchema.Name != "companion_state" {
			s.problem("json_schema without the companion_state schema")
		}
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Function.Name)
		}
		s.mu.Lock()
		s.offered = names
		s.mu.Unlock()
		st := state{State: "speak", Importance: importance, Closing: closing}
		if from := judgedFrom(user); closing == "terminal" || (s.OnlyUsers && from != "user" && !slices.Contains(s.Users, from)) {
			st.State = "listen"
		}
		props, _ := req.ResponseFormat.JSONSchema.Schema["properties"].(map[string]any)
		if props["selected"] != nil {
			st.Selected = new(bool)
		}
		if props["draft"] != nil {
			st.Draft = &draft{Emotion: "happy", To: []string{}, Message: line}
		}
		if ev, ok := props["events"].(map[string]any); ok {
			st.Events = plainEvents(ev)
			if s.Events != nil {
				for k, v := range s.Events(user) {
					st.Events[k] = v
				}
			}
		}
		b, _ := json.Marshal(st)
		msg["content"] = string(b)
		if s.Wrote != nil {
			s.Wrote(string(b))
		}
		if acts && s.Act.AfterWords && len(toolSaid) == 0 { // the state and its draft, then the tool, in one answer
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
				"function": map[string]any{"name": s.Act.Tool, "arguments": cmp.Or(s.Act.Args, "{}")}}}
			finish = "tool_calls"
			s.mu.Lock()
			s.acted++
			s.mu.Unlock()
		}
		if s.Gesture != "" && offered(s.Gesture) && st.State == "speak" {
			args := s.GestureArgs
			if args == "" {
				args = "{}"
			}
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
				"function": map[string]any{"name": s.Gesture, "arguments": args}}}
			finish = "tool_calls"
		}
	case len(req.Tools) > 0:
		args, _ := json.Marshal(map[string]any{"message": line, "to": []string{}, "emotion": "neutral"})
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", s.calls.Load()), "type": "function",
			"function": map[string]any{"name": "speak", "arguments": string(args)}}}
		finish = "tool_calls"
	default:
		msg["content"] = line
	}
	if s.Garbage {
		msg = map[string]any{"role": "assistant", "content": "Sure! I'd love to chat. {state: maybe", "refusal": nil}
		finish = "stop"
	}
	s.answer(w, req, msg, finish)
}

// state is a companion's answer as the fake writes it: the vote's fields
// first, then the draft, so that a streamed vote is complete before the
// draft is written (issue 28).
type state struct {
	State      string         `json:"state"`
	Importance float64        `json:"importance"`
	Selected   *bool          `json:"selected,omitempty"` // only when the schema asks for it (an older Chorus)
	Closing    string         `json:"closing"`
	Events     map[string]any `json:"events,omitempty"` // the card's events, after the vote
	Draft      *draft         `json:"draft,omitempty"`
}

// plainEvents fills in a card's events schema as a model with no opinion
// would: booleans false, strings "" (an enum's first value), numbers their
// minimum or 0.
func plainEvents(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := make(map[string]any, len(props))
	for name, p := range props {
		pm, _ := p.(map[string]any)
		switch pm["type"] {
		case "boolean":
			out[name] = false
		case "string":
			out[name] = ""
			if enum, ok := pm["enum"].([]any); ok && len(enum) > 0 {
				out[name] = enum[0]
			}
		case "number", "integer":
			out[name] = 0.0
			if lo, ok := pm["minimum"].(float64); ok {
				out[name] = lo
			}
		}
	}
	return out
}

type draft struct { // in the schema's order: the words first (issue 40)
	Message string   `json:"message"`
	Emotion string   `json:"emotion"`
	To      []string `json:"to"`
}

// maxRequest is the most a request may carry (OpenAI takes pictures of up
// to 20 MB; the body around them is small).
const maxRequest = 32 << 20

// refuse answers as the OpenAI API refuses a request.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

func (s *Server) answer(w http.ResponseWriter, req request, msg map[string]any, finish string) {
	if req.Stream {
		s.streamed.Add(1)
		s.stream(w, req.Model, msg, finish)
		return
	}
	content, _ := msg["content"].(string)
	pieces := len(tokens(content))
	for _, c := range toolCalls(msg) {
		pieces += len(tokens(c.args)) + 1
	}
	time.Sleep(s.tokenTime() * time.Duration(pieces))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", s.calls.Load()), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340},
	})
}

// tokenTime is how long one token takes to write (0: no pace).
func (s *Server) tokenTime() time.Duration {
	if s.TokensPerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / s.TokensPerSecond)
}

// stream writes msg as OpenAI streams a chat completion: a role chunk,
// the content a token at a time, each tool call's name then its
// arguments in pieces, the finish, [DONE]; each event flushed as written.
func (s *Server) stream(w http.ResponseWriter, model string, msg map[string]any, finish string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	id := fmt.Sprintf("chatcmpl-%d", s.calls.Load())
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil)
	// Each token is due at its time from the first, as a model writes
	// them: a late wake-up on a busy machine does not delay the rest.
	start, n := time.Now(), 0
	next := func() {
		n++
		time.Sleep(time.Until(start.Add(time.Duration(n) * s.tokenTime())))
	}
	content, _ := msg["content"].(string)
	for _, t := range tokens(content) {
		next()
		send(map[string]any{"content": t}, nil)
	}
	for i, c := range toolCalls(msg) {
		next()
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil)
		for _, t := range tokens(c.args) {
			next()
			send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": t}}}}, nil)
		}
	}
	send(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// tokens cuts text into pieces of up to four characters, as a model's
// tokens come.
func tokens(text string) []string {
	var out []string
	r := []rune(text)
	for len(r) > 0 {
		n := min(4, len(r))
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return out
}

type call struct{ id, name, args string }

// toolCalls are the calls of an answer's message.
func toolCalls(msg map[string]any) []call {
	var out []call
	cs, _ := msg["tool_calls"].([]any)
	for _, c := range cs {
		m, _ := c.(map[string]any)
		f, _ := m["function"].(map[string]any)
		id, _ := m["id"].(string)
		name, _ := f["name"].(string)
		args, _ := f["arguments"].(string)
		out = append(out, call{id, name, args})
	}
	return out
}

// imageIn finds a picture in a request's user messages (content parts of
// type image_url, as the OpenAI API carries images).
func imageIn(req request) (string, bool) {
	for _, m := range req.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if m.Role != "user" || json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" && p.ImageURL.URL != "" {
				return p.ImageURL.URL, true
			}
		}
	}
	return "", false
}

// historyLines counts the lines of the conversation so far, which the
// prompts put first, one JSON object per line, before a blank line.
func historyLines(prompt string) int {
	head, _, _ := strings.Cut(prompt, "\n\n")
	return strings.Count(head, "\n{\"from\":")
}

// judgedFrom is the sender of the message the prompt asks about: the first
// JSON line after the conversation.
func judgedFrom(prompt string) string {
	_, rest, _ := strings.Cut(prompt, "\n\n")
	for _, line := range strings.Split(rest, "\n") {
		var q struct {
			From string `json:"from"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &q) == nil && q.From != "" {
			return q.From // not a remembered fact's line ({"person": …})
		}
	}
	return ""
}

// TalkOverAfter is how many utterances a companion of the fake says in a
// realtime phase before it says Over.
const TalkOverAfter = 3

// talk answers the realtime prompt as a chatty companion: LISTEN right
// after its own words, Over after TalkOverAfter of them, else a line.
func (s *Server) talk(w http.ResponseWriter, req request, me, prompt string) {
	var mine, n int
	last := ""
	for _, line := range strings.Split(prompt, "\n") {
		var t struct {
			Idx   *int   `json:"idx"`
			Agent string `json:"agent"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &t) == nil && t.Idx != nil {
			n++
			last = t.Agent
			if t.Agent == me {
				mine++
			}
		}
	}
	if !strings.Contains(prompt, "LISTEN") || !strings.Contains(prompt, "Over") {
		s.problem("the realtime prompt does not offer LISTEN and Over")
	}
	time.Sleep(s.Latency)
	text := fmt.Sprintf("This is %s, with thought number %d.", me, n)
	switch {
	case mine >= TalkOverAfter:
		text = "Over"
	case last == me:
		text = "LISTEN"
	}
	if s.Line != nil && text != "Over" && text != "LISTEN" {
		text = s.Line(me, n)
	}
	s.answer(w, req, map[string]any{"role": "assistant", "content": text, "refusal": nil}, "stop")
}
