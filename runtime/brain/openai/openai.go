// Package openai is the chat-completions provider for the llm brain, on the
// official openai-go SDK. It covers OpenAI and every server that speaks the
// same API on a custom base URL: a llama.cpp server, Ollama, vLLM.
//
// JSON-schema output is used by default; JSONMode falls back to plain JSON
// mode (response_format json_object, the schema given in the prompt) for
// servers without schema support. 429 and 5xx answers are retried with
// backoff by the SDK inside the caller's deadline.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
)

// Config configures the provider.
type Config struct {
	BaseURL   string // e.g. http://192.168.1.20:8080/v1; empty means OpenAI
	APIKey    string
	Model     string
	JSONMode  bool
	MaxTokens int
	// MaxRetries for 429 and 5xx (default 2); the context deadline bounds
	// the whole call.
	MaxRetries int
	HTTPClient *http.Client
}

// Chat is an llm.Chatter on chat completions.
type Chat struct {
	cfg    Config
	client sdk.Client
}

var _ llm.Chatter = (*Chat)(nil)

// New returns the provider.
func New(cfg Config) *Chat {
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = 2
	}
	opts := []option.RequestOption{option.WithMaxRetries(retries)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	} else {
		opts = append(opts, option.WithAPIKey("none")) // local servers need no key, the SDK needs one
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Chat{cfg: cfg, client: sdk.NewClient(opts...)}
}

// Chat implements llm.Chatter.
func (c *Chat) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	if c.cfg.MaxTokens > 0 {
		p.MaxTokens = sdk.Int(int64(c.cfg.MaxTokens))
	}
	system := r.System
	if r.Schema != nil {
		if c.cfg.JSONMode {
			p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
			b, _ := json.Marshal(r.Schema)
			system += "\n\nAnswer with one JSON object that follows this JSON Schema, and nothing else:\n" + string(b)
		} else {
			p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: r.SchemaName, Schema: r.Schema, Strict: sdk.Bool(true)}}
		}
	}
	if system != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(system))
	}
	hasImage := false
	for _, t := range r.Turns {
		switch t.Role {
		case llm.User:
			if t.Image == nil {
				p.Messages = append(p.Messages, sdk.UserMessage(t.Text))
				continue
			}
			hasImage = true
			p.Messages = append(p.Messages, sdk.UserMessage([]sdk.ChatCompletionContentPartUnionParam{
				sdk.TextContentPart(t.Text),
				sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:" + t.Image.MIME + ";base64," + t.Image.Base64}),
			}))
		case llm.Assistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if t.Text != "" {
				a.Content.OfString = sdk.String(t.Text)
			}
			for _, tc := range t.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Args)}}})
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.Tool:
			p.Messages = append(p.Messages, sdk.ToolMessage(t.Text, t.ToolCallID))
		}
	}
	for _, tool := range r.Tools {
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: tool.Name, Description: sdk.String(tool.Description), Parameters: shared.FunctionParameters(tool.Parameters)}))
	}
	if r.ForceTool != "" {
		p.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{
			Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: r.ForceTool}}
	}
	start := time.Now()
	resp, err := c.client.Chat.Completions.New(ctx, p)
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && hasImage && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && apiErr.StatusCode != 429 {
			return llm.Response{}, fmt.Errorf("openai %s: %w: %v", c.cfg.Model, llm.ErrNoImages, err)
		}
		return llm.Response{}, fmt.Errorf("openai %s after %v: %w", c.cfg.Model, time.Since(start).Round(time.Millisecond), err)
	}
	if len(resp.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("openai %s: answer without choices", c.cfg.Model)
	}
	ch := resp.Choices[0]
	out := llm.Response{Text: ch.Message.Content, Refusal: ch.Message.Refusal, Truncated: ch.FinishReason == "length"}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	return out, nil
}
