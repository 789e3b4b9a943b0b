package agent

// The Messages API on the wire: the request built from a conversation, and
// the event stream decoded into a [Response]. See anthropic.go for the
// engine around them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Wire types of the Messages API (only the fields we use).

type anthRequest struct {
	Model     string        `json:"model"`
	MaxTokens int           `json:"max_tokens"`
	System    []anthBlock   `json:"system,omitempty"`
	Messages  []anthMessage `json:"messages"`
	Tools     []anthTool    `json:"tools,omitempty"`
	Thinking  *anthThinking `json:"thinking,omitempty"`
	Stream    bool          `json:"stream"`
}

type anthThinking struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

type anthMessage struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

type cacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// anthBlock is one content block; Type says which fields apply.
type anthBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// thinking / redacted_thinking
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`

	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

// thinkingBudget maps an effort to a thinking budget (0: thinking off).
func thinkingBudget(effort string) (int, error) {
	e := strings.ToLower(strings.TrimSpace(effort))
	switch e {
	case "", "none", "off":
		return 0, nil
	}
	if b, ok := thinkingBudgets[e]; ok {
		return b, nil
	}
	if n, err := strconv.Atoi(e); err == nil {
		if n < 1024 || n > 1<<20 {
			return 0, fmt.Errorf("anthropic: thinking budget %d is outside 1024..%d tokens", n, 1<<20)
		}
		return n, nil
	}
	return 0, fmt.Errorf("anthropic: unknown effort %q (want low, medium, high, none, or a thinking budget in tokens); nothing was sent", effort)
}

// buildRequest maps the provider-neutral conversation onto the Messages
// API's stricter shape: system prompts go to the system parameter; tool
// messages become tool_result blocks in the user message that follows the
// assistant's tool_use (merged with any user text after them, results
// first); a tool_use without a recorded result gets an error result, and a
// result whose call is not in the preceding assistant message becomes text,
// since the API rejects both; empty messages are dropped and the first
// message is a user message. Cache breakpoints go on the last tool, the
// system prompt, the last message and the user message before it.
func (a *Anthropic) buildRequest(req Request) (anthRequest, error) {
	budget, err := thinkingBudget(req.Effort)
	if err != nil {
		return anthRequest{}, err
	}
	ar := a.build(req, budget)
	// During a tool loop the API requires the assistant message before the
	// results to start with its thinking block. A conversation that lost it
	// (another engine's, or one restored without thinking) cannot satisfy
	// that, so this request goes without thinking rather than failing.
	if budget > 0 && !thinkingContinues(ar.Messages) {
		ar = a.build(req, 0)
	}
	return ar, nil
}

// build is [Anthropic.buildRequest] with a thinking budget (0: off).
func (a *Anthropic) build(req Request, budget int) anthRequest {
	model := req.Model
	if model == "" {
		model = a.model
	}
	ar := anthRequest{Model: model, MaxTokens: a.maxTokens + budget, Stream: true, Messages: []anthMessage{}}
	if budget > 0 {
		ar.Thinking = &anthThinking{Type: "enabled", BudgetTokens: budget}
	}

	// pending are the tool_use blocks of the last assistant message still
	// without a result: the call's own id, and the id sent (ids the API
	// would reject, and duplicates, are replaced).
	type use struct{ id, wire string }
	var pending []use
	// closePending gives every call still waiting for a result an error
	// result, in the user message after the assistant's.
	closePending := func() {
		for _, c := range pending {
			ar.Messages = addUserBlock(ar.Messages, anthBlock{Type: "tool_result", ToolUseID: c.wire,
				Content: "error: no result was recorded for this call (the turn was interrupted)", IsError: true})
		}
		pending = nil
	}
	leading := true
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if strings.TrimSpace(m.Content) == "" {
				continue
			}
			if leading {
				ar.System = append(ar.System, anthBlock{Type: "text", Text: m.Content})
			} else {
				ar.Messages = addUserBlock(ar.Messages, anthBlock{Type: "text", Text: m.Content})
			}
			continue
		case RoleAssistant:
			leading = false
			closePending()
			var blocks []anthBlock
			if budget > 0 {
				for _, t := range m.Thinking {
					blocks = append(blocks, t.block())
				}
			}
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, anthBlock{Type: "text", Text: m.Content})
			}
			seen := map[string]bool{}
			for i, c := range m.ToolCalls {
				wire := c.ID
				if !validToolUseID(wire) || seen[wire] {
					wire = "toolu_pb_" + strconv.Itoa(len(ar.Messages)) + "_" + strconv.Itoa(i)
				}
				seen[wire] = true
				blocks = append(blocks, anthBlock{Type: "tool_use", ID: wire, Name: c.Name, Input: toolInput(c.Arguments)})
				pending = append(pending, use{id: c.ID, wire: wire})
			}
			if len(blocks) == 0 {
				continue
			}
			if n := len(ar.Messages); n > 0 && ar.Messages[n-1].Role == RoleAssistant {
				ar.Messages[n-1].Content = append(ar.Messages[n-1].Content, blocks...)
			} else {
				ar.Messages = append(ar.Messages, anthMessage{Role: RoleAssistant, Content: blocks})
			}
		case RoleTool:
			leading = false
			idx := -1
			for i, c := range pending {
				if c.id == m.ToolCallID {
					idx = i
					break
				}
			}
			if idx < 0 {
				name := m.Name
				if name == "" {
					name = "a tool"
				}
				ar.Messages = addUserBlock(ar.Messages, anthBlock{Type: "text",
					Text: "Result of " + name + " (call " + m.ToolCallID + "):\n" + nonEmpty(m.Content)})
				continue
			}
			wire := pending[idx].wire
			pending = append(pending[:idx], pending[idx+1:]...)
			ar.Messages = addUserBlock(ar.Messages, anthBlock{Type: "tool_result", ToolUseID: wire, Content: nonEmpty(m.Content)})
		default: // user, and any role the API does not know
			leading = false
			if strings.TrimSpace(m.Content) == "" {
				continue
			}
			ar.Messages = addUserBlock(ar.Messages, anthBlock{Type: "text", Text: m.Content})
		}
	}
	closePending()
	// The API wants a user message first, and one last (a final assistant
	// message would be taken as the start of the answer).
	if len(ar.Messages) == 0 || ar.Messages[0].Role != RoleUser {
		ar.Messages = append([]anthMessage{{Role: RoleUser, Content: []anthBlock{{Type: "text", Text: continues}}}}, ar.Messages...)
	}
	if ar.Messages[len(ar.Messages)-1].Role != RoleUser {
		ar.Messages = append(ar.Messages, anthMessage{Role: RoleUser, Content: []anthBlock{{Type: "text", Text: continues}}})
	}

	for _, t := range req.Tools {
		ar.Tools = append(ar.Tools, anthTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t.Parameters)})
	}

	// Cache breakpoints (the API allows four). The prefix order is tools,
	// system, messages: each breakpoint caches everything before it.
	if n := len(ar.Tools); n > 0 {
		ar.Tools[n-1].CacheControl = ephemeral
	}
	if n := len(ar.System); n > 0 {
		ar.System[n-1].CacheControl = ephemeral
	}
	marked := 0
	for i := len(ar.Messages) - 1; i >= 0 && marked < 2; i-- {
		if ar.Messages[i].Role != RoleUser && i != len(ar.Messages)-1 {
			continue
		}
		if markLastCacheable(ar.Messages[i].Content) {
			marked++
		}
	}
	return ar
}

// continues stands in for a user message the conversation lacks.
const continues = "(The conversation continues.)"

// inputSchema is a tool's parameters as the API takes them: a JSON Schema
// of type object. A schema without a type is given "type": "object"; one
// that is not an object schema at all becomes the empty object schema, and
// the tool's own decoder reports bad arguments.
func inputSchema(params json.RawMessage) json.RawMessage {
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	var m map[string]json.RawMessage
	if !isJSONObject(params) || json.Unmarshal(params, &m) != nil {
		return empty
	}
	typ, ok := m["type"]
	if !ok {
		m["type"] = json.RawMessage(`"object"`)
		b, err := json.Marshal(m)
		if err != nil {
			return empty
		}
		return b
	}
	if string(bytes.TrimSpace(typ)) != `"object"` {
		return empty
	}
	return params
}

// thinkingContinues reports whether built messages may be sent with
// thinking on: unless the last message answers tool calls, in which case
// the assistant message it answers must start with a thinking block.
func thinkingContinues(msgs []anthMessage) bool {
	n := len(msgs)
	if n < 2 || len(msgs[n-1].Content) == 0 || msgs[n-1].Content[0].Type != "tool_result" {
		return true
	}
	prev := msgs[n-2].Content
	return len(prev) > 0 && (prev[0].Type == "thinking" || prev[0].Type == "redacted_thinking")
}

// addUserBlock appends b to the trailing user message, or starts one.
// tool_result blocks go before any text of that message, as the API wants.
func addUserBlock(msgs []anthMessage, b anthBlock) []anthMessage {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != RoleUser {
		return append(msgs, anthMessage{Role: RoleUser, Content: []anthBlock{b}})
	}
	c := msgs[n-1].Content
	if b.Type != "tool_result" {
		msgs[n-1].Content = append(c, b)
		return msgs
	}
	i := 0
	for i < len(c) && c[i].Type == "tool_result" {
		i++
	}
	c = append(c, anthBlock{})
	copy(c[i+1:], c[i:])
	c[i] = b
	msgs[n-1].Content = c
	return msgs
}

// markLastCacheable puts a cache breakpoint on the last block of content
// that may carry one (thinking blocks may not).
func markLastCacheable(content []anthBlock) bool {
	for i := len(content) - 1; i >= 0; i-- {
		switch content[i].Type {
		case "thinking", "redacted_thinking":
			continue
		}
		content[i].CacheControl = ephemeral
		return true
	}
	return false
}

// toolInput is the input of a tool_use block sent back to the API, which
// takes only a JSON object; anything else (arguments the model got wrong,
// kept as a string) is sent as {} and the tool result says what was wrong.
func toolInput(args json.RawMessage) json.RawMessage {
	if isJSONObject(args) {
		return args
	}
	return json.RawMessage("{}")
}

// validToolUseID reports whether the API accepts id for a tool_use block
// (^[a-zA-Z0-9_-]+$, bounded here to 256 bytes).
func validToolUseID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no output)"
	}
	return s
}

// block is the wire form of a thinking block being sent back.
func (t ThinkingBlock) block() anthBlock {
	if t.Redacted != "" {
		return anthBlock{Type: "redacted_thinking", Data: t.Redacted}
	}
	text, sig := t.Text, t.Signature
	return anthBlock{Type: "thinking", Thinking: &text, Signature: &sig}
}

// anthEvent is one streamed event; Type says which fields apply.
type anthEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage anthUsage `json:"usage"`
	} `json:"message"`
	Index        *int `json:"index"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// merge overwrites the fields u reports: message_delta's counts are
// cumulative and supersede message_start's.
func (u *anthUsage) merge(o anthUsage) {
	for _, f := range []struct{ dst, src **int }{
		{&u.InputTokens, &o.InputTokens}, {&u.OutputTokens, &o.OutputTokens},
		{&u.CacheCreationInputTokens, &o.CacheCreationInputTokens}, {&u.CacheReadInputTokens, &o.CacheReadInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

func (u anthUsage) usage() Usage {
	v := func(p *int) int {
		if p == nil || *p < 0 {
			return 0
		}
		return *p
	}
	in, cw, cr := v(u.InputTokens), v(u.CacheCreationInputTokens), v(u.CacheReadInputTokens)
	return Usage{InputTokens: in + cw + cr, OutputTokens: v(u.OutputTokens), CacheCreationInputTokens: cw, CacheReadInputTokens: cr}
}

// partialBlock accumulates one content block.
type partialBlock struct {
	kind    string
	text    strings.Builder // text, or thinking
	sig     strings.Builder
	data    string
	id      string
	name    string
	input   strings.Builder
	started json.RawMessage // tool_use input given at start
}

// decodeAnthropicStream reads a Messages event stream to message_stop. It
// never panics on malformed input; see [Anthropic.Stream] for the errors.
func decodeAnthropicStream(r io.Reader, onText func(string)) (Response, error) {
	var (
		usage  anthUsage
		blocks = map[int]*partialBlock{}
		done   bool
	)
	handle := func(event, data string) error {
		var ev anthEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("anthropic: malformed stream event %q: %w", truncate(data, 200), err)
		}
		if ev.Type == "" {
			ev.Type = event
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				usage.merge(ev.Message.Usage)
			}
		case "content_block_start":
			if ev.Index == nil || ev.ContentBlock == nil {
				return fmt.Errorf("anthropic: content_block_start without index or block: %s", truncate(data, 200))
			}
			cb := ev.ContentBlock
			p := &partialBlock{kind: cb.Type, id: cb.ID, name: cb.Name, data: cb.Data}
			switch cb.Type {
			case "text":
				p.text.WriteString(cb.Text)
				if cb.Text != "" && onText != nil {
					onText(cb.Text)
				}
			case "thinking":
				p.text.WriteString(cb.Thinking)
				p.sig.WriteString(cb.Signature)
			case "tool_use":
				p.started = cb.Input
			}
			blocks[*ev.Index] = p
		case "content_block_delta":
			if ev.Index == nil || ev.Delta == nil {
				return fmt.Errorf("anthropic: content_block_delta without index or delta: %s", truncate(data, 200))
			}
			p := blocks[*ev.Index]
			if p == nil {
				return fmt.Errorf("anthropic: delta for block %d that never started", *ev.Index)
			}
			switch ev.Delta.Type {
			case "text_delta":
				p.text.WriteString(ev.Delta.Text)
				if ev.Delta.Text != "" && onText != nil {
					onText(ev.Delta.Text)
				}
			case "input_json_delta":
				p.input.WriteString(ev.Delta.PartialJSON)
			case "thinking_delta":
				p.text.WriteString(ev.Delta.Thinking)
			case "signature_delta":
				p.sig.WriteString(ev.Delta.Signature)
			}
		case "message_delta":
			if ev.Usage != nil {
				usage.merge(*ev.Usage)
			}
		case "message_stop":
			done = true
		case "error":
			if ev.Error == nil {
				return &AnthropicError{Message: truncate(data, 500)}
			}
			return &AnthropicError{StatusCode: errorTypeStatus[ev.Error.Type], Type: ev.Error.Type, Message: truncate(ev.Error.Message, 500)}
		}
		// ping, content_block_stop and event types added later carry
		// nothing we need.
		return nil
	}

	br := bufio.NewReaderSize(r, 64<<10)
	var (
		event string
		data  []string
	)
	for !done {
		line, err := readLine(br)
		if errors.Is(err, errLineTooLong) {
			return Response{}, errors.New("anthropic: event stream line too long")
		}
		if errors.Is(err, errStreamTooLarge) {
			return Response{}, err
		}
		if err != nil && err != io.EOF {
			return Response{}, fmt.Errorf("anthropic: reading stream: %w: %w", ErrTransient, err)
		}
		if err == io.EOF {
			// An event not ended by a blank line is not dispatched: half
			// an event is indistinguishable from a dropped connection.
			break
		}
		switch {
		case line == "":
			if len(data) > 0 {
				if herr := handle(event, strings.Join(data, "\n")); herr != nil {
					return Response{}, herr
				}
			}
			event, data = "", data[:0]
		case line[0] == ':':
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			}
		}
	}
	if !done {
		return Response{}, fmt.Errorf("anthropic: stream ended before message_stop: %w", ErrTransient)
	}

	idx := make([]int, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var out Response
	var text strings.Builder
	for n, i := range idx {
		p := blocks[i]
		switch p.kind {
		case "text":
			text.WriteString(p.text.String())
		case "thinking":
			out.Thinking = append(out.Thinking, ThinkingBlock{Text: p.text.String(), Signature: p.sig.String()})
		case "redacted_thinking":
			out.Thinking = append(out.Thinking, ThinkingBlock{Redacted: p.data})
		case "tool_use":
			args := p.input.String()
			if strings.TrimSpace(args) == "" && len(p.started) > 0 {
				args = string(p.started)
			}
			id := p.id
			if id == "" {
				id = "toolu_pb_" + strconv.Itoa(n)
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: p.name, Arguments: toolArguments(args)})
		}
	}
	out.Text = text.String()
	out.Usage = usage.usage()
	return out, nil
}
