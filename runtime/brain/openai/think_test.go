package openai

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A state answer as a model streams it, vote first, cut into tokens of
// about four characters.
const streamedState = `{"state":"speak","importance":7,"selected":false,"closing":"none","draft":{"emotion":"happy","message":"Good morning, everyone. The garden is lovely today!","to":[]}}`

func tokens(s string) []string {
	var out []string
	for len(s) > 4 {
		out = append(out, s[:4])
		s = s[4:]
	}
	return append(out, s)
}

func contentEvents(text string) []string {
	out := []string{delta(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, tok := range tokens(text) {
		out = append(out, delta(map[string]any{"content": tok}, nil))
	}
	return out
}

func whole(text string) []string {
	return append(contentEvents(text), delta(map[string]any{}, "stop"), "data: [DONE]")
}

// heard is what a Heard was told, in order.
type heard struct {
	mu     sync.Mutex
	events []string
}

func (h *heard) hear() brain.Heard {
	add := func(s string) { h.mu.Lock(); h.events = append(h.events, s); h.mu.Unlock() }
	return brain.Heard{
		Vote: func(t brain.Thought) { add("vote " + string(t.State)) },
		Said: func(text string, e protocol.Emotion) { add("said " + string(e) + " " + text) },
	}
}

func (h *heard) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

func streamBrain(s *server, max int, idle time.Duration) *llm.Brain {
	return &llm.Brain{Chat: New(Config{BaseURL: s.URL + "/v1", Model: "m", StreamIdle: idle}), Draft: true, MaxUtterance: max}
}

func card() brain.Input {
	return brain.Input{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en"},
		Message: protocol.NewMessage("m1", "user", nil, "Hello!", "")}
}

// The vote is heard as soon as its fields are written, before any of the
// draft; the draft's first clause, then its sentences one by one as each
// ends; the Thought is
// Think's (issue 28, item 2).
func TestThinkStreamHearsTheVoteFirst(t *testing.T) {
	s := newServer(t, llmtest.Events(t, whole(streamedState)...))
	var h heard
	got, err := streamBrain(s, 0, 0).ThinkStream(context.Background(), card(), h.hear())
	if err != nil || got.State != protocol.Speak || got.Importance != 7 || got.Draft != "Good morning, everyone. The garden is lovely today!" || got.Cut {
		t.Fatalf("thought %+v, err %v", got, err)
	}
	want := []string{"vote speak", "said happy Good morning,", "said happy Good morning, everyone.", "said happy Good morning, everyone. The garden is lovely today!"}
	if strings.Join(h.list(), "|") != strings.Join(want, "|") {
		t.Fatalf("heard %q, want %q", h.list(), want)
	}
	if s.Requests()[0]["stream"] != true {
		t.Fatalf("not streamed: %v", s.Requests()[0]["stream"])
	}
}

// A stream that stops mid-draft — cut in the middle of a sentence, or
// stalled — is the vote with what was complete, marked Cut; a broken vote
// is an error with nothing heard (issue 28, item 5).
func TestThinkStreamFaults(t *testing.T) {
	cutAt := strings.Index(streamedState, "The garden") + 6
	for _, tc := range []struct {
		name   string
		reply  llmtest.Reply
		draft  string
		cut    bool
		err    string
		votes  int
		maxUtt int
		held   bool   // the stream stalls: held open after its last event
		text   string // what a held stream writes (default: the answer cut mid-sentence)
	}{
		{name: "cut mid-sentence", reply: llmtest.Events(t, contentEvents(streamedState[:cutAt])...), draft: "Good morning, everyone.", cut: true, votes: 1},
		{name: "stalled mid-sentence", held: true, draft: "Good morning, everyone.", cut: true, votes: 1},
		{name: "cut before a sentence ended", reply: llmtest.Events(t, contentEvents(streamedState[:strings.Index(streamedState, "morning")])...),
			err: "before the draft's first sentence", votes: 1},
		{name: "broken vote", reply: llmtest.Events(t, whole(strings.Replace(streamedState, `"importance":7`, `"importance":70`, 1))...),
			err: "importance", votes: 0},
		{name: "broken vote, the rest still streaming", held: true, text: strings.Replace(streamedState[:cutAt], `"importance":7`, `"importance":70`, 1),
			err: "importance", votes: 0},
		{name: "past max_utterance", reply: llmtest.Events(t, whole(streamedState)...), maxUtt: 30, draft: "Good morning, everyone.", votes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := tc.reply
			if tc.held {
				stalled := make(chan struct{})
				text := tc.text
				if text == "" {
					text = streamedState[:cutAt]
				}
				reply = llmtest.HeldEvents(t, stalled, contentEvents(text)...)
				defer close(stalled) // before the server closes (a cleanup)
			}
			s := newServer(t, reply)
			var h heard
			got, err := streamBrain(s, tc.maxUtt, 2*time.Second).ThinkStream(context.Background(), card(), h.hear())
			votes := 0
			for _, e := range h.list() {
				if strings.HasPrefix(e, "vote") {
					votes++
				}
			}
			switch {
			case votes != tc.votes:
				t.Fatalf("votes heard %d, want %d (%q)", votes, tc.votes, h.list())
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
			case err != nil || got.Draft != tc.draft || got.Cut != tc.cut || got.State != protocol.Speak:
				t.Fatalf("thought %+v, err %v", got, err)
			}
		})
	}
}

// A server that refuses stream is asked for the whole answer: the vote
// and the draft are heard at once, and the Thought is the same.
func TestThinkStreamOnAServerThatDoesNotStream(t *testing.T) {
	refuse := func(w http.ResponseWriter, req map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"stream is not supported","type":"invalid_request_error","param":"stream","code":null}}`))
	}
	s := newServer(t, refuse, completion(streamedState, "stop"))
	var h heard
	got, err := streamBrain(s, 0, 0).ThinkStream(context.Background(), card(), h.hear())
	if err != nil || got.Draft != "Good morning, everyone. The garden is lovely today!" {
		t.Fatalf("thought %+v, err %v", got, err)
	}
	if l := h.list(); len(l) != 2 || l[0] != "vote speak" || !strings.HasSuffix(l[1], "lovely today!") {
		t.Fatalf("heard %q", l)
	}
}
