// Streaming (issue 28): chat.completion.chunk events, then [DONE].

package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// ChatStream implements llm.Streamer: the request with stream true, the
// answer's text handed to text as its chunks come. A server that refuses
// to stream (a 400 naming stream), or answers whole, is asked for whole
// answers from then on (llm.Stream).
func (c *Chat) ChatStream(ctx context.Context, r llm.Request, text func(string)) (llm.Response, error) {
	req, hasImage := c.request(r)
	req.Stream = true
	start := time.Now()
	return c.stream.Do(ctx, text, req, &Assembler{}, func() (llm.Response, error) { return c.Chat(ctx, r) },
		func(err error) error { return c.failed(err, hasImage, start) })
}

// chunk is the part of a chat.completion.chunk Chorus reads.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// maxToolCalls bounds the calls one streamed answer may make.
const maxToolCalls = 64

// Assembler builds a Response from a stream's events, as they come.
type Assembler struct {
	text, refusal strings.Builder
	calls         []callParts // their Arguments are in args
	args          [][]byte
	finish        string
	done          bool
}

// Add takes one event's data and returns the text it adds; at [DONE] it
// returns modelhttp.ErrEnd (the answer is complete), and after it
// nothing more is taken.
func (a *Assembler) Add(data []byte) (string, error) {
	if a.done {
		return "", errors.New("openai: an event after [DONE]")
	}
	if string(data) == "[DONE]" {
		a.done = true
		return "", modelhttp.ErrEnd
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("openai: a stream event is not a chat.completion.chunk: %w", err)
	}
	if len(c.Error) > 0 {
		return "", fmt.Errorf("openai: the stream failed: %s", modelhttp.ErrorText(c.Error))
	}
	if len(c.Choices) == 0 {
		return "", nil // a usage chunk
	}
	ch := c.Choices[0]
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finish = *ch.FinishReason
	}
	if ch.Delta.Refusal != nil {
		a.refusal.WriteString(*ch.Delta.Refusal)
	}
	for _, tc := range ch.Delta.ToolCalls {
		i := len(a.calls) - 1
		if tc.Index != nil {
			i = *tc.Index
		}
		switch {
		case i < 0 || i > len(a.calls) || i >= maxToolCalls:
			return "", fmt.Errorf("openai: a tool call piece for call %d of %d", i, len(a.calls))
		case i == len(a.calls):
			a.calls = append(a.calls, callParts{})
			a.args = append(a.args, nil)
		}
		if tc.ID != "" {
			a.calls[i].ID = tc.ID
		}
		if tc.Function.Name != "" {
			a.calls[i].Name = tc.Function.Name
		}
		a.args[i] = append(a.args[i], tc.Function.Arguments...)
	}
	if ch.Delta.Content == nil {
		return "", nil
	}
	a.text.WriteString(*ch.Delta.Content)
	return *ch.Delta.Content, nil
}

// Response is the whole answer; a stream that ended before its finish
// reason is an error (cut mid-answer).
func (a *Assembler) Response() (llm.Response, error) {
	if a.finish == "" {
		return llm.Response{}, errors.New("openai: the stream ended before the answer did")
	}
	text, refusal := a.text.String(), a.refusal.String()
	calls := make([]callParts, len(a.calls))
	for i, c := range a.calls {
		calls[i] = callParts{ID: c.ID, Name: c.Name, Arguments: string(a.args[i])}
	}
	return answerOf(&text, &refusal, calls, a.finish)
}
