// Package anthropic is the Messages API provider for the llm brain, on the
// official anthropic-sdk-go. The state answer uses structured outputs
// (output_config.format, a JSON schema); the vision and speak tools are
// ordinary tools. 429 and 5xx answers are retried with backoff by the SDK
// inside the caller's deadline.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
)

// Config configures the provider.
type Config struct {
	BaseURL    string // empty means Anthropic's API
	APIKey     string
	Model      string
	MaxTokens  int // default 1024
	MaxRetries int // default 2
	HTTPClient *http.Client
}

// Chat is an llm.Chatter on the Messages API.
type Chat struct {
	cfg    Config
	client sdk.Client
}

var _ llm.Chatter = (*Chat)(nil)

// New returns the provider.
func New(cfg Config) *Chat {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 1024
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = 2
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(retries)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Chat{cfg: cfg, client: sdk.NewClient(opts...)}
}

func inputSchema(s map[string]any) sdk.ToolInputSchemaParam {
	p := sdk.ToolInputSchemaParam{Properties: s["properties"]}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			p.Required = append(p.Required, fmt.Sprint(r))
		}
	}
	return p
}

// Chat implements llm.Chatter.
func (c *Chat) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(c.cfg.Model), MaxTokens: int64(c.cfg.MaxTokens)}
	if r.System != "" {
		p.System = []sdk.TextBlockParam{{Text: r.System}}
	}
	if r.Schema != nil {
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: r.Schema}
	}
	hasImage := false
	for _, t := range r.Turns {
		switch t.Role {
		case llm.User:
			var blocks []sdk.ContentBlockParamUnion
			if t.Image != nil {
				hasImage = true
				blocks = append(blocks, sdk.NewImageBlockBase64(t.Image.MIME, t.Image.Base64))
			}
			blocks = append(blocks, sdk.NewTextBlock(t.Text))
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		case llm.Assistant:
			var blocks []sdk.ContentBlockParamUnion
			if t.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(t.Text))
			}
			for _, tc := range t.ToolCalls {
				var in any = map[string]any{}
				if len(tc.Args) > 0 {
					in = json.RawMessage(tc.Args)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, in, tc.Name))
			}
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		case llm.Tool:
			// Tool results go back in a user turn; consecutive ones share it.
			block := sdk.NewToolResultBlock(t.ToolCallID, t.Text, false)
			if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == sdk.MessageParamRoleUser && isToolResults(p.Messages[n-1]) {
				p.Messages[n-1].Content = append(p.Messages[n-1].Content, block)
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(block))
			}
		}
	}
	for _, tool := range r.Tools {
		u := sdk.ToolUnionParamOfTool(inputSchema(tool.Parameters), tool.Name)
		u.OfTool.Description = sdk.String(tool.Description)
		p.Tools = append(p.Tools, u)
	}
	if r.ForceTool != "" {
		p.ToolChoice = sdk.ToolChoiceParamOfTool(r.ForceTool)
	}
	start := time.Now()
	msg, err := c.client.Messages.New(ctx, p)
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && hasImage && apiErr.StatusCode == 400 && strings.Contains(strings.ToLower(apiErr.Error()), "image") {
			return llm.Response{}, fmt.Errorf("anthropic %s: %w: %v", c.cfg.Model, llm.ErrNoImages, err)
		}
		return llm.Response{}, fmt.Errorf("anthropic %s after %v: %w", c.cfg.Model, time.Since(start).Round(time.Millisecond), err)
	}
	var out llm.Response
	var text []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	out.Text = strings.Join(text, "")
	switch msg.StopReason {
	case sdk.StopReasonMaxTokens:
		out.Truncated = true
	case sdk.StopReasonRefusal:
		out.Refusal = out.Text
		if out.Refusal == "" {
			out.Refusal = "(no reason given)"
		}
	}
	return out, nil
}

func isToolResults(m sdk.MessageParam) bool {
	for _, b := range m.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return len(m.Content) > 0
}
