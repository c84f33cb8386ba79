// Package anthropic is the Messages API provider for the llm brain: a small
// typed client of POST {base_url}/v1/messages over net/http. The state
// answer uses structured outputs (output_config.format, a JSON schema);
// the vision and speak tools are ordinary tools; images go as base64
// image blocks. 429, 529 and 5xx answers are retried as
// runtime/modelhttp says, never past the caller's deadline.
//
// Structured outputs accept no numeric bounds (minimum, maximum): the
// provider moves them into the property's description, where the model
// still reads them, and the llm brain checks the answer as before.
package anthropic

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

// DefaultBaseURL is Anthropic's API; APIVersion the version header sent.
const (
	DefaultBaseURL = "https://api.anthropic.com"
	APIVersion     = "2023-06-01"
)

// Config configures the provider.
type Config struct {
	BaseURL    string // empty means Anthropic's API
	APIKey     string
	Model      string
	MaxTokens  int // default 1024
	MaxRetries int // default 2
	HTTPClient *http.Client
	Log        *slog.Logger
	Metrics    *metrics.Metrics
	// StreamIdle is the longest a streamed answer may go without an event
	// (default modelhttp.DefaultIdle; the API pings meanwhile).
	StreamIdle time.Duration
}

// MaxImageBytes is the longest image the API takes: it measures an
// image's base64 data and refuses a longer one with 400 ("image exceeds
// 5 MB maximum: N bytes > 5242880 bytes"), though a body may send frames
// up to the bridge's 8 MiB. Chorus does not send such an image.
const MaxImageBytes = 5 << 20

// Chat is an llm.Chatter on the Messages API.
type Chat struct {
	stream *llm.Stream // its calls, streamed or whole
	cfg    Config
}

var _ llm.Streamer = (*Chat)(nil)

// DefaultMaxTokens caps an answer unless max_tokens says (the API wants
// one).
const DefaultMaxTokens = 1024

// New returns the provider.
func New(cfg Config) *Chat {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	h := http.Header{}
	h.Set("X-Api-Key", cfg.APIKey)
	h.Set("Anthropic-Version", APIVersion)
	client := &modelhttp.Client{Provider: "anthropic", HTTP: cfg.HTTPClient, MaxRetries: cfg.MaxRetries, Log: cfg.Log,
		OnRateLimited: cfg.Metrics.RateLimitedBy("anthropic")}
	return &Chat{cfg: cfg, stream: &llm.Stream{Client: client, URL: base + "/v1/messages", Header: h, Idle: cfg.StreamIdle,
		Decode: DecodeResponse, Provider: "anthropic", Model: cfg.Model, Log: cfg.Log}}
}

// The request, as the API defines it (the fields Chorus uses).
type (
	messagesRequest struct {
		Model        string        `json:"model"`
		MaxTokens    int           `json:"max_tokens"`
		System       []block       `json:"system,omitempty"`
		Messages     []message     `json:"messages"`
		Tools        []toolDef     `json:"tools,omitempty"`
		ToolChoice   *toolChoice   `json:"tool_choice,omitempty"`
		OutputConfig *outputConfig `json:"output_config,omitempty"`
		Stream       bool          `json:"stream,omitempty"`
	}
	message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	block struct {
		Type      string          `json:"type"` // text, image, tool_use, tool_result
		Text      string          `json:"text,omitempty"`
		Source    *imageSource    `json:"source,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
	}
	imageSource struct {
		Type      string `json:"type"` // base64
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	toolDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
	toolChoice struct {
		Type string `json:"type"` // tool
		Name string `json:"name"`
	}
	outputConfig struct {
		Format outputFormat `json:"format"`
	}
	outputFormat struct {
		Type   string         `json:"type"` // json_schema
		Schema map[string]any `json:"schema"`
	}
)

func (c *Chat) request(r llm.Request) (messagesRequest, bool) {
	req := messagesRequest{Model: c.cfg.Model, MaxTokens: c.cfg.MaxTokens}
	if r.System != "" {
		req.System = []block{{Type: "text", Text: r.System}}
	}
	if r.Schema != nil {
		req.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: unbounded(r.Schema)}}
	}
	hasImage := false
	for _, t := range r.Turns {
		switch t.Role {
		case llm.User:
			var blocks []block
			if t.Image != nil {
				hasImage = true
				blocks = append(blocks, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: t.Image.MIME, Data: t.Image.Base64}})
			}
			blocks = append(blocks, block{Type: "text", Text: t.Text})
			req.Messages = append(req.Messages, message{Role: "user", Content: blocks})
		case llm.Assistant:
			var blocks []block
			if t.Text != "" {
				blocks = append(blocks, block{Type: "text", Text: t.Text})
			}
			for _, tc := range t.ToolCalls {
				in := tc.Args
				if len(in) == 0 {
					in = json.RawMessage("{}")
				}
				blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
			req.Messages = append(req.Messages, message{Role: "assistant", Content: blocks})
		case llm.Tool:
			// Tool results go back in a user turn; consecutive ones share it.
			res := block{Type: "tool_result", ToolUseID: t.ToolCallID, Content: t.Text}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && allToolResults(req.Messages[n-1]) {
				req.Messages[n-1].Content = append(req.Messages[n-1].Content, res)
			} else {
				req.Messages = append(req.Messages, message{Role: "user", Content: []block{res}})
			}
		}
	}
	for _, td := range r.Tools {
		schema := map[string]any{"type": "object", "properties": td.Parameters["properties"]}
		if req, ok := td.Parameters["required"]; ok {
			schema["required"] = req
		}
		req.Tools = append(req.Tools, toolDef{Name: td.Name, Description: td.Description, InputSchema: schema})
	}
	if r.ForceTool != "" {
		req.ToolChoice = &toolChoice{Type: "tool", Name: r.ForceTool}
	}
	return req, hasImage
}

func allToolResults(m message) bool {
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			return false
		}
	}
	return len(m.Content) > 0
}

// unbounded returns a copy of a JSON schema with numeric bounds moved into
// descriptions: structured outputs refuse them.
func unbounded(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	var bounds []string
	for k, v := range s {
		switch k {
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			bounds = append(bounds, fmt.Sprintf("%s %v", k, v))
			continue
		}
		switch vv := v.(type) {
		case map[string]any:
			out[k] = unbounded(vv)
		case llm.Properties: // in their order (llm.StateSchema)
			fixed := make(llm.Properties, len(vv))
			for i, p := range vv {
				fixed[i] = llm.Property{Name: p.Name, Schema: unbounded(p.Schema)}
			}
			out[k] = fixed
		default:
			out[k] = v
		}
	}
	if props, ok := out["properties"].(map[string]any); ok {
		fixed := make(map[string]any, len(props))
		for name, p := range props {
			if pm, ok := p.(map[string]any); ok {
				fixed[name] = unbounded(pm)
			} else {
				fixed[name] = p
			}
		}
		out["properties"] = fixed
	}
	if len(bounds) > 0 {
		d, _ := out["description"].(string)
		out["description"] = strings.TrimSpace(d + " (" + strings.Join(bounds, ", ") + ")")
	}
	return out
}

// Chat implements llm.Chatter.
func (c *Chat) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	if err := c.imagesFit(r); err != nil {
		return llm.Response{}, err
	}
	req, hasImage := c.request(r)
	start := time.Now()
	out, err := c.stream.Whole(ctx, req)
	if err != nil {
		return llm.Response{}, c.failed(err, hasImage, start)
	}
	return out, nil
}

// imagesFit refuses, before sending, an image the API would refuse.
func (c *Chat) imagesFit(r llm.Request) error {
	for _, t := range r.Turns {
		if t.Image != nil && len(t.Image.Base64) > MaxImageBytes {
			err := fmt.Errorf("anthropic %s: the image is %d bytes in base64, over the API's limit of %d (5 MB): not sent", c.cfg.Model, len(t.Image.Base64), MaxImageBytes)
			metrics.OrNew(c.cfg.Metrics).Reject(c.cfg.Log, "image", c.cfg.Model, "oversize", err)
			return err
		}
	}
	return nil
}

// failed names what failed: the model, how long it took, or that it
// takes no images.
func (c *Chat) failed(err error, hasImage bool, start time.Time) error {
	var se *modelhttp.StatusError
	if errors.As(err, &se) && hasImage && se.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(se.Message), "image") {
		return fmt.Errorf("anthropic %s: %w: %v", c.cfg.Model, llm.ErrNoImages, err)
	}
	return fmt.Errorf("anthropic %s after %v: %w", c.cfg.Model, time.Since(start).Round(time.Millisecond), err)
}

// response is the part of a Messages API answer Chorus reads.
type response struct {
	Type       string         `json:"type"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
}

// contentBlock is one block of an answer's content.
type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// DecodeResponse reads a Messages API answer: its text blocks joined, its
// tool uses, a refusal, and whether it stopped at the token limit.
func DecodeResponse(b []byte) (llm.Response, error) {
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.Response{}, fmt.Errorf("anthropic: the answer is not a message: %w", err)
	}
	if r.Type != "message" {
		return llm.Response{}, fmt.Errorf("anthropic: the answer is of type %q, not a message", r.Type)
	}
	return answerOf(r.Content, r.StopReason)
}

// answerOf is the Response of an answer's content and stop reason, whole
// or assembled from a stream.
func answerOf(content []contentBlock, stop string) (llm.Response, error) {
	var out llm.Response
	var text []string
	for _, c := range content {
		switch c.Type {
		case "text":
			text = append(text, c.Text)
		case "tool_use":
			if c.Name == "" {
				return llm.Response{}, errors.New("anthropic: a tool use without a name")
			}
			in := c.Input
			if len(in) == 0 {
				in = json.RawMessage("{}")
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Args: in})
		}
	}
	out.Text = strings.Join(text, "")
	switch stop {
	case "max_tokens":
		out.Truncated = true
	case "refusal":
		out.Refusal = out.Text
		if out.Refusal == "" {
			out.Refusal = "(no reason given)"
		}
	}
	return out, nil
}
