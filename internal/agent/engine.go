package agent

import (
	"context"
	"encoding/json"
	"errors"
)

// Role of a message in a model conversation.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the conversation sent to a model.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// Thinking is the reasoning an assistant message came with, kept only
	// so an engine that must send it back (anthropic, within a tool loop)
	// can; it is never shown as assistant text, and engines that do not
	// need it ignore it.
	Thinking []ThinkingBlock `json:"thinking,omitempty"`
}

// ThinkingBlock is one reasoning block of a model response, opaque outside
// its engine: the provider requires it back unmodified, signature and all.
type ThinkingBlock struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Redacted is the encrypted data of a block the provider redacted
	// (Text and Signature are then empty).
	Redacted string `json:"redacted,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the JSON object
// the model produced, passed through untouched.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool offered to the model (JSON Schema parameters).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model request.
type Request struct {
	Model    string     // model name; engines may ignore it
	Effort   string     // reasoning effort; "" means the model's default
	Messages []Message  // full conversation, system prompt first
	Tools    []ToolSpec // tools the model may call
}

// Usage is the provider-reported token accounting of one request.
// InputTokens counts every prompt token, cached or not; the cache fields say
// how many of them were written to or read from the provider's prompt cache
// (0 for providers that do not report it).
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Add adds o's counts to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
}

// Response is the completed result of one model request.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	// Thinking is the response's reasoning, for [Message.Thinking].
	Thinking []ThinkingBlock
}

// Engine streams one model request. Implementations call onText for every
// text delta as it arrives (in order, from the calling goroutine's point of
// view never concurrently) and return the completed response. A cancelled ctx
// must stop streaming promptly and return an error wrapping ctx.Err().
type Engine interface {
	Name() string
	Stream(ctx context.Context, req Request, onText func(delta string)) (Response, error)
}

// ErrTransient marks an engine failure that may succeed if retried once
// (a dropped connection, a 5xx, a 429). Wrap it with %w.
var ErrTransient = errors.New("transient model failure")
