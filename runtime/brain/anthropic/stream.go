// Streaming (issue 28): the Messages API's events, message_start to
// message_stop.

package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// ChatStream implements llm.Streamer: the request with stream true, the
// text blocks' deltas handed to text as they come. A server that refuses
// to stream (a 400 naming stream), or answers whole, is asked for whole
// answers from then on (llm.Stream).
func (c *Chat) ChatStream(ctx context.Context, r llm.Request, text func(string)) (llm.Response, error) {
	if err := c.imagesFit(r); err != nil {
		return llm.Response{}, err
	}
	req, hasImage := c.request(r)
	req.Stream = true
	start := time.Now()
	return c.stream.Do(ctx, text, req, &Assembler{}, func() (llm.Response, error) { return c.Chat(ctx, r) },
		func(err error) error { return c.failed(err, hasImage, start) })
}

// event is the part of a streaming event Chorus reads; its type names it.
type event struct {
	Type         string `json:"type"`
	Index        *int   `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"` // text, tool_use
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"` // text_delta, input_json_delta; a message_delta's has none
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Error json.RawMessage `json:"error"`
}

// maxBlocks bounds the content blocks of one streamed answer.
const maxBlocks = 64

// Assembler builds a Response from a stream's events, as they come.
type Assembler struct {
	started, stopped bool
	blocks           []streamBlock
	stop             string
}

type streamBlock struct {
	kind, id, name string
	text           []byte // a text block's text, a tool use's input JSON
}

// Add takes one event's data and returns the text it adds; at
// message_stop it returns modelhttp.ErrEnd (the answer is complete).
func (a *Assembler) Add(data []byte) (string, error) {
	var e event
	if err := json.Unmarshal(data, &e); err != nil {
		return "", fmt.Errorf("anthropic: a stream event is not JSON: %w", err)
	}
	if a.stopped && e.Type != "ping" {
		return "", fmt.Errorf("anthropic: a %s event after message_stop", e.Type)
	}
	if !a.started && e.Type != "message_start" && e.Type != "ping" && e.Type != "error" {
		return "", fmt.Errorf("anthropic: a %s event before message_start", e.Type)
	}
	switch e.Type {
	case "message_start":
		a.started = true
	case "ping":
	case "error":
		return "", fmt.Errorf("anthropic: the stream failed: %s", modelhttp.ErrorText(e.Error))
	case "content_block_start":
		if e.Index == nil || *e.Index != len(a.blocks) || e.ContentBlock == nil || len(a.blocks) >= maxBlocks {
			return "", errors.New("anthropic: a content block out of order")
		}
		a.blocks = append(a.blocks, streamBlock{kind: e.ContentBlock.Type, id: e.ContentBlock.ID, name: e.ContentBlock.Name,
			text: []byte(e.ContentBlock.Text)})
		b := a.blocks[len(a.blocks)-1]
		if b.kind == "text" {
			return e.ContentBlock.Text, nil
		}
	case "content_block_delta":
		if e.Index == nil || *e.Index < 0 || *e.Index >= len(a.blocks) || e.Delta == nil {
			return "", errors.New("anthropic: a delta for no content block")
		}
		b := &a.blocks[*e.Index]
		switch {
		case e.Delta.Type == "text_delta" && b.kind == "text":
			b.text = append(b.text, e.Delta.Text...)
			return e.Delta.Text, nil
		case e.Delta.Type == "input_json_delta" && b.kind == "tool_use":
			b.text = append(b.text, e.Delta.PartialJSON...)
		}
	case "content_block_stop":
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			a.stop = e.Delta.StopReason
		}
	case "message_stop":
		a.stopped = true
		return "", modelhttp.ErrEnd
	}
	return "", nil // an event this client does not read (a thinking block's, a new kind)
}

// Response is the whole answer, as DecodeResponse reads a whole one; a
// stream that ended before message_stop is an error (cut mid-answer).
func (a *Assembler) Response() (llm.Response, error) {
	if !a.stopped {
		return llm.Response{}, errors.New("anthropic: the stream ended before the answer did")
	}
	content := make([]contentBlock, len(a.blocks))
	for i, b := range a.blocks {
		content[i] = contentBlock{Type: b.kind, ID: b.id, Name: b.name}
		if b.kind == "tool_use" {
			content[i].Input = json.RawMessage(b.text)
		} else {
			content[i].Text = string(b.text)
		}
	}
	return answerOf(content, a.stop)
}
