// Package openai is the chat-completions provider for the llm brain: a
// small typed client of POST {base_url}/chat/completions over net/http. It
// covers OpenAI and every server that speaks the same API on a custom base
// URL: a llama.cpp server, Ollama, vLLM.
//
// JSON-schema output is used by default; JSONMode falls back to plain JSON
// mode (response_format json_object, the schema given in the prompt) for
// servers without schema support. Tools (vision, speak) and image parts
// (a data: URL) are sent as the API defines them. 429 and 5xx answers are
// retried as runtime/modelhttp says, never past the caller's deadline.
//
// Chorus speaks the API itself rather than through the official SDK: the
// SDK cost the robot's binary about 30 MB for three endpoints, and retried
// 429s silently past the vote deadline (BENCHMARKS.md has the sizes).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = modelhttp.OpenAIBaseURL

// Config configures the provider.
type Config struct {
	BaseURL   string // e.g. http://192.0.2.20:8080/v1; empty means OpenAI
	APIKey    string
	Model     string
	JSONMode  bool
	MaxTokens int
	// MaxRetries for 429 and 5xx (default 2); the context deadline bounds
	// the whole call.
	MaxRetries int
	HTTPClient *http.Client
	Log        *slog.Logger
	Metrics    *metrics.Metrics
	// StreamIdle is the longest a streamed answer may go without a chunk
	// (default modelhttp.DefaultIdle).
	StreamIdle time.Duration
}

// Chat is an llm.Chatter on chat completions.
type Chat struct {
	cfg    Config
	stream *llm.Stream // its calls, streamed or whole
}

var _ llm.Streamer = (*Chat)(nil)

// New returns the provider.
func New(cfg Config) *Chat {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	client := &modelhttp.Client{Provider: "openai", HTTP: cfg.HTTPClient, MaxRetries: cfg.MaxRetries, Log: cfg.Log,
		OnRateLimited: cfg.Metrics.RateLimitedBy("openai")}
	return &Chat{cfg: cfg, stream: &llm.Stream{Client: client, URL: base + "/chat/completions", Header: h, Idle: cfg.StreamIdle,
		Decode: DecodeResponse, Provider: "openai", Model: cfg.Model, Log: cfg.Log}}
}

// The request, as the API defines it (the fields Chorus uses).
type (
	chatRequest struct {
		Model          string          `json:"model"`
		Messages       []chatMessage   `json:"messages"`
		MaxTokens      int             `json:"max_tokens,omitempty"`
		ResponseFormat *responseFormat `json:"response_format,omitempty"`
		Tools          []toolDef       `json:"tools,omitempty"`
		ToolChoice     *toolChoice     `json:"tool_choice,omitempty"`
		Stream         bool            `json:"stream,omitempty"`
	}
	chatMessage struct {
		Role       string     `json:"role"`
		Content    any        `json:"content"` // a string, []contentPart, or nil beside tool calls
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	contentPart struct {
		Type     string    `json:"type"` // text, image_url
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	imageURL struct {
		URL string `json:"url"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function functionCall `json:"function"`
	}
	functionCall struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	responseFormat struct {
		Type       string      `json:"type"` // json_schema, json_object
		JSONSchema *jsonSchema `json:"json_schema,omitempty"`
	}
	jsonSchema struct {
		Name   string         `json:"name"`
		Schema map[string]any `json:"schema"`
		Strict bool           `json:"strict"`
	}
	toolDef struct {
		Type     string      `json:"type"`
		Function functionDef `json:"function"`
	}
	functionDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	toolChoice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
)

// request builds the API request for r; it reports whether it carries an
// image.
func (c *Chat) request(r llm.Request) (chatRequest, bool) {
	req := chatRequest{Model: c.cfg.Model, MaxTokens: c.cfg.MaxTokens}
	system := r.System
	if r.Schema != nil {
		if c.cfg.JSONMode {
			req.ResponseFormat = &responseFormat{Type: "json_object"}
			b, _ := json.Marshal(r.Schema)
			system += "\n\nAnswer with one JSON object that follows this JSON Schema, and nothing else:\n" + string(b)
		} else {
			req.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: r.SchemaName, Schema: r.Schema, Strict: true}}
		}
	}
	if system != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: system})
	}
	hasImage := false
	for _, t := range r.Turns {
		switch t.Role {
		case llm.User:
			if t.Image == nil {
				req.Messages = append(req.Messages, chatMessage{Role: "user", Content: t.Text})
				continue
			}
			hasImage = true
			req.Messages = append(req.Messages, chatMessage{Role: "user", Content: []contentPart{
				{Type: "text", Text: t.Text},
				{Type: "image_url", ImageURL: &imageURL{URL: "data:" + t.Image.MIME + ";base64," + t.Image.Base64}},
			}})
		case llm.Assistant:
			m := chatMessage{Role: "assistant"}
			if t.Text != "" {
				m.Content = t.Text
			}
			for _, tc := range t.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: string(tc.Args)}})
			}
			req.Messages = append(req.Messages, m)
		case llm.Tool:
			req.Messages = append(req.Messages, chatMessage{Role: "tool", Content: t.Text, ToolCallID: t.ToolCallID})
		}
	}
	for _, td := range r.Tools {
		req.Tools = append(req.Tools, toolDef{Type: "function", Function: functionDef{Name: td.Name, Description: td.Description, Parameters: td.Parameters}})
	}
	if r.ForceTool != "" {
		req.ToolChoice = &toolChoice{Type: "function"}
		req.ToolChoice.Function.Name = r.ForceTool
	}
	return req, hasImage
}

// Chat implements llm.Chatter.
func (c *Chat) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	req, hasImage := c.request(r)
	start := time.Now()
	out, err := c.stream.Whole(ctx, req)
	if err != nil {
		return llm.Response{}, c.failed(err, hasImage, start)
	}
	return out, nil
}

// failed names what failed: the model, how long it took, or that it
// takes no images.
func (c *Chat) failed(err error, hasImage bool, start time.Time) error {
	var se *modelhttp.StatusError
	if errors.As(err, &se) && hasImage && se.Status >= 400 && se.Status < 500 && se.Status != http.StatusTooManyRequests {
		return fmt.Errorf("openai %s: %w: %v", c.cfg.Model, llm.ErrNoImages, err)
	}
	return fmt.Errorf("openai %s after %v: %w", c.cfg.Model, time.Since(start).Round(time.Millisecond), err)
}

// response is the part of a chat.completion Chorus reads. Servers add
// fields of their own; those are ignored.
type response struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				ID       string    `json:"id"`
				Function callParts `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// callParts is a tool call as the API writes it.
type callParts struct {
	ID        string `json:"-"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// DecodeResponse reads a chat.completion answer: the first choice's text,
// refusal and tool calls, and whether it stopped at the token limit.
func DecodeResponse(b []byte) (llm.Response, error) {
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, fmt.Errorf("openai: the answer is not a chat completion: %w", err)
	}
	if len(r.Choices) == 0 {
		return llm.Response{}, errors.New("openai: answer without choices")
	}
	ch := r.Choices[0]
	calls := make([]callParts, len(ch.Message.ToolCalls))
	for i, tc := range ch.Message.ToolCalls {
		calls[i] = tc.Function
		calls[i].ID = tc.ID
	}
	return answerOf(ch.Message.Content, ch.Message.Refusal, calls, ch.FinishReason)
}

// answerOf is the Response of a choice: its text, refusal, tool calls
// and finish reason, whole or assembled from a stream.
func answerOf(text, refusal *string, calls []callParts, finish string) (llm.Response, error) {
	out := llm.Response{Truncated: finish == "length"}
	if text != nil {
		out.Text = *text
	}
	if refusal != nil {
		out.Refusal = *refusal
	}
	for _, tc := range calls {
		if tc.Name == "" {
			return llm.Response{}, errors.New("openai: a tool call without a function name")
		}
		args := json.RawMessage(tc.Arguments)
		if tc.Arguments == "" {
			args = json.RawMessage("{}")
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Args: args})
	}
	return out, nil
}
