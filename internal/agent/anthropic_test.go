package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/internal/agent/anthropictest"
)

// The fake Messages server below speaks the event sequence the real API
// sends: message_start, then per content block content_block_start, its
// deltas and content_block_stop, then message_delta (stop reason and
// cumulative usage) and message_stop, with ping events in between.

// aEvent writes one named SSE event and flushes it.
func aEvent(w io.Writer, name, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	w.(http.Flusher).Flush()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pieces splits s into pieces of n runes (the last one shorter); the API
// splits partial_json anywhere, but a JSON string carries whole runes.
func pieces(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}

// aStream is a scripted streamed message.
type aStream struct {
	w   io.Writer
	idx int
}

func newAStream(w http.ResponseWriter, usage string) *aStream {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("request-id", "req_fake")
	w.WriteHeader(http.StatusOK)
	if usage == "" {
		usage = `{"input_tokens":10,"output_tokens":1}`
	}
	aEvent(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`)
	return &aStream{w: w}
}

func (s *aStream) block(start string, deltas ...string) {
	i := s.idx
	s.idx++
	aEvent(s.w, "content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, start))
	for _, d := range deltas {
		aEvent(s.w, "content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, d))
	}
	aEvent(s.w, "content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

func (s *aStream) text(parts ...string) {
	var ds []string
	for _, p := range parts {
		ds = append(ds, `{"type":"text_delta","text":`+jsonString(p)+`}`)
	}
	s.block(`{"type":"text","text":""}`, ds...)
}

func (s *aStream) thinking(signature string, parts ...string) {
	var ds []string
	for _, p := range parts {
		ds = append(ds, `{"type":"thinking_delta","thinking":`+jsonString(p)+`}`)
	}
	ds = append(ds, `{"type":"signature_delta","signature":`+jsonString(signature)+`}`)
	s.block(`{"type":"thinking","thinking":"","signature":""}`, ds...)
}

// tool streams a tool_use block whose input arrives in n-byte pieces.
func (s *aStream) tool(id, name, input string, n int) {
	var ds []string
	for _, p := range pieces(input, n) {
		ds = append(ds, `{"type":"input_json_delta","partial_json":`+jsonString(p)+`}`)
	}
	s.block(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":{}}`, id, name), ds...)
}

func (s *aStream) ping() { aEvent(s.w, "ping", `{"type": "ping"}`) }

func (s *aStream) end(stop, usage string) {
	if usage == "" {
		usage = `{"output_tokens":5}`
	}
	aEvent(s.w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":`+usage+`}`)
	aEvent(s.w, "message_stop", `{"type":"message_stop"}`)
}

// seenRequest is what the fake server received.
type seenRequest struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    string
}

// fakeAnthropic serves the i-th request with handlers[i] (the last one
// for any further requests) and records every request.
type fakeAnthropic struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func newFakeAnthropic(t *testing.T, handlers ...func(w http.ResponseWriter, r *http.Request)) *fakeAnthropic {
	t.Helper()
	f := &fakeAnthropic{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: string(raw)})
		n := len(f.seen)
		f.mu.Unlock()
		handlers[min(n, len(handlers))-1](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// engine returns an engine for f whose retry waits are recorded, not slept.
func (f *fakeAnthropic) engine(t *testing.T, waits *[]time.Duration) *Anthropic {
	t.Helper()
	e, err := NewAnthropic(AnthropicConfig{BaseURL: f.URL, APIKey: "sk-ant-test-key-0123456789", Model: "claude-test", HTTPClient: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	e.sleep = func(ctx context.Context, d time.Duration) error {
		if waits != nil {
			*waits = append(*waits, d)
		}
		return ctx.Err()
	}
	return e
}

func TestAnthropicStreamsTextThinkingAndToolUse(t *testing.T) {
	input := `{"path": "docs/naïve plan.md", "content": "line one\nline \"two\"\n"}`
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, `{"input_tokens":21,"cache_creation_input_tokens":1500,"cache_read_input_tokens":3000,"output_tokens":1}`)
		s.ping()
		s.thinking("sig-ABC==", "Let me ", "think about ", "this.")
		s.text("I will ", "write", " the file.")
		s.ping()
		s.tool("toolu_01A", "write_file", input, 3)
		s.tool("toolu_01B", "list_dir", "", 1)
		s.end("tool_use", `{"output_tokens":87}`)
	})
	var deltas []string
	resp, err := f.engine(t, nil).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}},
		func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"I will ", "write", " the file."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q (thinking is not text)", deltas, want)
	}
	if resp.Text != "I will write the file." {
		t.Errorf("Text = %q", resp.Text)
	}
	if want := []ThinkingBlock{{Text: "Let me think about this.", Signature: "sig-ABC=="}}; !reflect.DeepEqual(resp.Thinking, want) {
		t.Errorf("Thinking = %+v, want %+v", resp.Thinking, want)
	}
	want := []ToolCall{
		{ID: "toolu_01A", Name: "write_file", Arguments: json.RawMessage(input)},
		{ID: "toolu_01B", Name: "list_dir", Arguments: json.RawMessage(`{}`)},
	}
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("ToolCalls = %+v", resp.ToolCalls)
	}
	for i, w := range want {
		g := resp.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	var a struct{ Path, Content string }
	if err := json.Unmarshal(resp.ToolCalls[0].Arguments, &a); err != nil || a.Path != "docs/naïve plan.md" || a.Content != "line one\nline \"two\"\n" {
		t.Errorf("assembled input decodes to %+v, %v", a, err)
	}
	// Input counts every prompt token; the cache fields say which were cached.
	if want := (Usage{InputTokens: 4521, OutputTokens: 87, CacheCreationInputTokens: 1500, CacheReadInputTokens: 3000}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestAnthropicRedactedThinkingAndLaterUsage(t *testing.T) {
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, `{"input_tokens":5,"output_tokens":1}`)
		s.block(`{"type":"redacted_thinking","data":"EncryptedBlob=="}`)
		s.block(`{"type":"text","text":"Hi"}`, `{"type":"text_delta","text":" there"}`)
		// Newer API versions repeat the input counts in message_delta.
		s.end("end_turn", `{"input_tokens":7,"cache_read_input_tokens":100,"output_tokens":9}`)
	})
	var got string
	resp, err := f.engine(t, nil).Stream(context.Background(), Request{}, func(d string) { got += d })
	if err != nil {
		t.Fatal(err)
	}
	if got != "Hi there" || resp.Text != "Hi there" {
		t.Errorf("streamed %q, Text %q", got, resp.Text)
	}
	if want := []ThinkingBlock{{Redacted: "EncryptedBlob=="}}; !reflect.DeepEqual(resp.Thinking, want) {
		t.Errorf("Thinking = %+v", resp.Thinking)
	}
	if want := (Usage{InputTokens: 107, OutputTokens: 9, CacheReadInputTokens: 100}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, "")
		s.text("ok")
		s.end("end_turn", "")
	})
	req := Request{
		Model:  "claude-override",
		Effort: "medium",
		Messages: []Message{
			{Role: RoleSystem, Content: "You are in Plan."},
			{Role: RoleUser, Content: "Look at main.go"},
			{Role: RoleAssistant, Content: "Looking.", Thinking: []ThinkingBlock{{Text: "hmm", Signature: "sig1"}, {Redacted: "R=="}},
				ToolCalls: []ToolCall{
					{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)},
					{ID: "toolu_2", Name: "list_dir"},
				}},
			{Role: RoleTool, ToolCallID: "toolu_1", Name: "read_file", Content: "package main"},
			{Role: RoleTool, ToolCallID: "toolu_2", Name: "list_dir", Content: ""},
		},
		Tools: []ToolSpec{
			{Name: "read_file", Description: "Read a workspace file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_dir", Description: "List."},
		},
	}
	if _, err := f.engine(t, nil).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := f.requests()[0]
	if got.Path != "/v1/messages" {
		t.Errorf("path = %q", got.Path)
	}
	for h, v := range map[string]string{"x-api-key": "sk-ant-test-key-0123456789", "anthropic-version": "2023-06-01",
		"content-type": "application/json", "accept": "text/event-stream"} {
		if g := got.Header.Get(h); g != v {
			t.Errorf("header %s = %q, want %q", h, g, v)
		}
	}
	if got.Header.Get("Authorization") != "" {
		t.Error("an Authorization header was sent as well")
	}
	cc := map[string]any{"type": "ephemeral"}
	want := map[string]any{
		"model":      "claude-override",
		"max_tokens": float64(DefaultAnthropicMaxTokens + 8192),
		"stream":     true,
		"thinking":   map[string]any{"type": "enabled", "budget_tokens": float64(8192)},
		"system":     []any{map[string]any{"type": "text", "text": "You are in Plan.", "cache_control": cc}},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "Look at main.go", "cache_control": cc}}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "hmm", "signature": "sig1"},
				map[string]any{"type": "redacted_thinking", "data": "R=="},
				map[string]any{"type": "text", "text": "Looking."},
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": map[string]any{"path": "main.go"}},
				map[string]any{"type": "tool_use", "id": "toolu_2", "name": "list_dir", "input": map[string]any{}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "package main"},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "content": "(no output)", "cache_control": cc},
			}},
		},
		"tools": []any{
			map[string]any{"name": "read_file", "description": "Read a workspace file.", "input_schema": map[string]any{
				"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}},
			map[string]any{"name": "list_dir", "description": "List.", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}},
				"cache_control": cc},
		},
	}
	if !reflect.DeepEqual(got.Body, want) {
		g, _ := json.MarshalIndent(got.Body, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("request body:\n%s\nwant:\n%s", g, w)
	}
	if err := anthropictest.Validate([]byte(got.Raw)); err != nil {
		t.Errorf("the API would reject the request: %v", err)
	}
}

// TestAnthropicConversationRepairs: histories the API would reject are sent
// in a shape it accepts, and nothing the model said is lost.
func TestAnthropicConversationRepairs(t *testing.T) {
	e, err := NewAnthropic(AnthropicConfig{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		effort   string
		msgs     []Message
		want     string // JSON of the messages sent
		thinking bool
	}{{
		name: "interrupted call gets an error result, before the next prompt",
		msgs: []Message{
			{Role: RoleUser, Content: "go"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
			{Role: RoleUser, Content: "next"},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"bash","input":{"command":"ls"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"error: no result was recorded for this call (the turn was interrupted)","is_error":true},{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}]}]`,
	}, {
		name: "orphan result becomes text; empty assistant dropped; first message is the user's",
		msgs: []Message{
			{Role: RoleAssistant, Content: "Earlier answer."},
			{Role: RoleTool, ToolCallID: "gone", Name: "grep", Content: "x:1:y"},
			{Role: RoleAssistant},
			{Role: RoleSystem, Content: "Reminder: still in Plan."},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"(The conversation continues.)","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"Earlier answer."}]},` +
			`{"role":"user","content":[{"type":"text","text":"Result of grep (call gone):\nx:1:y"},{"type":"text","text":"Reminder: still in Plan.","cache_control":{"type":"ephemeral"}}]}]`,
	}, {
		name: "ids the API rejects are replaced, consistently",
		msgs: []Message{
			{Role: RoleUser, Content: "go"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call:1", Name: "a"}, {ID: "dup", Name: "b"}, {ID: "dup", Name: "c"}}},
			{Role: RoleTool, ToolCallID: "call:1", Content: "1"},
			{Role: RoleTool, ToolCallID: "dup", Content: "2"},
			{Role: RoleTool, ToolCallID: "dup", Content: "3"},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_pb_1_0","name":"a","input":{}},{"type":"tool_use","id":"dup","name":"b","input":{}},{"type":"tool_use","id":"toolu_pb_1_2","name":"c","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_pb_1_0","content":"1"},{"type":"tool_result","tool_use_id":"dup","content":"2"},{"type":"tool_result","tool_use_id":"toolu_pb_1_2","content":"3","cache_control":{"type":"ephemeral"}}]}]`,
	}, {
		name:   "a tool loop that lost its thinking is continued without thinking",
		effort: "high",
		msgs: []Message{
			{Role: RoleUser, Content: "go"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "x", Arguments: json.RawMessage(`"not an object"`)}}},
			{Role: RoleTool, ToolCallID: "a", Content: "r"},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r","cache_control":{"type":"ephemeral"}}]}]`,
	}, {
		name:     "a new prompt may think even if an earlier loop did not",
		effort:   "low",
		thinking: true,
		msgs: []Message{
			{Role: RoleUser, Content: "go"},
			{Role: RoleAssistant, Content: "done", Thinking: []ThinkingBlock{{Text: "t", Signature: "s"}}},
			{Role: RoleUser, Content: "again"},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"done"}]},` +
			`{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]`,
	}, {
		name: "without thinking, thinking blocks are not sent",
		msgs: []Message{
			{Role: RoleUser, Content: "go"},
			{Role: RoleAssistant, Content: "done", Thinking: []ThinkingBlock{{Text: "t", Signature: "s"}}},
			{Role: RoleUser, Content: "again"},
		},
		want: `[{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"done"}]},` +
			`{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ar, err := e.buildRequest(Request{Effort: c.effort, Messages: c.msgs})
			if err != nil {
				t.Fatal(err)
			}
			if raw, _ := json.Marshal(ar); anthropictest.Validate(raw) != nil {
				t.Errorf("the API would reject it: %v", anthropictest.Validate(raw))
			}
			got, _ := json.Marshal(ar.Messages)
			if string(got) != c.want {
				t.Errorf("messages\n got %s\nwant %s", got, c.want)
			}
			if (ar.Thinking != nil) != c.thinking {
				t.Errorf("thinking = %+v, want enabled %v", ar.Thinking, c.thinking)
			}
			if ar.Thinking != nil && ar.MaxTokens <= ar.Thinking.BudgetTokens {
				t.Errorf("max_tokens %d must exceed the budget %d", ar.MaxTokens, ar.Thinking.BudgetTokens)
			}
		})
	}
}

func TestAnthropicEffort(t *testing.T) {
	for effort, want := range map[string]int{"": 0, "none": 0, "OFF": 0, "low": 2048, "medium": 8192, " High ": 16384, "4096": 4096} {
		if got, err := thinkingBudget(effort); err != nil || got != want {
			t.Errorf("thinkingBudget(%q) = %d, %v; want %d", effort, got, err, want)
		}
	}
	// An effort the engine does not know fails before anything is sent.
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a request was sent") })
	for _, bad := range []string{"extreme", "100", "-5", "1e9"} {
		_, err := f.engine(t, nil).Stream(context.Background(), Request{Effort: bad}, nil)
		if err == nil || errors.Is(err, ErrTransient) || !strings.Contains(err.Error(), "nothing was sent") && !strings.Contains(err.Error(), "outside") {
			t.Errorf("effort %q: err = %v", bad, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestAnthropicErrorResponses(t *testing.T) {
	const key = "sk-ant-test-key-0123456789"
	cases := []struct {
		status    int
		header    map[string]string
		body      string
		transient bool
		attempts  int // requests made
		contains  string
	}{
		{400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"},"request_id":"req_9"}`, false, 1, "HTTP 400: invalid_request_error: max_tokens: too large (request req_9)"},
		// A proxy echoing the key: the error must not carry it.
		{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`, false, 1, "invalid x-api-key [redacted]"},
		{404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`, false, 1, "not_found_error: model: claude-nope"},
		{500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, true, 1, "HTTP 500"},
		{502, nil, `<html>bad gateway</html>`, true, 1, "<html>bad gateway</html>"},
		{429, map[string]string{"retry-after": "2"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, true, 5, "slow down"},
		{529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, 5, "HTTP 529: overloaded_error: Overloaded"},
		{529, map[string]string{"x-should-retry": "false"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, 1, "Overloaded"},
		{429, map[string]string{"retry-after": "3600"}, `{"type":"error","error":{"type":"rate_limit_error","message":"come back later"}}`, true, 1, "come back later"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.status, c.header), func(t *testing.T) {
			f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			_, err := f.engine(t, nil).Stream(context.Background(), Request{}, nil)
			var ae *AnthropicError
			if !errors.As(err, &ae) || ae.StatusCode != c.status {
				t.Fatalf("err = %#v, want *AnthropicError with status %d", err, c.status)
			}
			if errors.Is(err, ErrTransient) != c.transient {
				t.Errorf("transient = %v, want %v (%v)", !c.transient, c.transient, err)
			}
			if !strings.Contains(err.Error(), c.contains) {
				t.Errorf("err = %q, want it to contain %q", err, c.contains)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the API key is in the error: %v", err)
			}
			if n := len(f.requests()); n != c.attempts {
				t.Errorf("%d requests, want %d", n, c.attempts)
			}
		})
	}
}

// TestAnthropicRetriesHonourRetryAfter: 429 and 529 are retried, waiting as
// long as the server asks (retry-after-ms over retry-after), with backoff
// when it asks nothing; the retried request is the same request.
func TestAnthropicRetriesHonourRetryAfter(t *testing.T) {
	limited := func(status int, h map[string]string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			for k, v := range h {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"wait"}}`)
		}
	}
	ok := func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, "")
		s.text("finally")
		s.end("end_turn", "")
	}
	f := newFakeAnthropic(t,
		limited(429, map[string]string{"retry-after": "3"}),
		limited(529, map[string]string{"retry-after-ms": "250", "retry-after": "9"}),
		limited(529, nil),
		limited(429, map[string]string{"retry-after": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), "retry-after-ms": "1500"}),
		ok)
	var waits []time.Duration
	resp, err := f.engine(t, &waits).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "x"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "finally" {
		t.Errorf("Text = %q", resp.Text)
	}
	if len(waits) != 4 || waits[0] != 3*time.Second || waits[1] != 250*time.Millisecond || waits[3] != 1500*time.Millisecond {
		t.Errorf("waits = %v, want [3s 250ms <backoff> 1.5s]", waits)
	}
	if len(waits) == 4 && (waits[2] <= 0 || waits[2] > anthropicBackoffMax) {
		t.Errorf("backoff wait %v out of range", waits[2])
	}
	reqs := f.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for _, r := range reqs[1:] {
		if r.Raw != reqs[0].Raw {
			t.Errorf("a retry sent a different body")
		}
	}
}

func TestAnthropicRetryWaitIsCancellable(t *testing.T) {
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("retry-after", "30")
		w.WriteHeader(429)
	})
	e := f.engine(t, nil)
	e.sleep = sleepCtx // the real wait
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the first request has been answered.
		for len(f.requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	done := make(chan error, 1)
	go func() { _, err := e.Stream(ctx, Request{}, nil); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransient) {
			t.Errorf("err = %v, want context.Canceled and not transient", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stream kept waiting for retry-after after cancel")
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestAnthropicStreamErrorEvents: an error event is classified like its
// HTTP twin; an overload before any output is retried, after output it is
// not (the text already reached the person).
func TestAnthropicStreamErrorEvents(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	t.Run("overload before output is retried", func(t *testing.T) {
		f := newFakeAnthropic(t,
			func(w http.ResponseWriter, r *http.Request) {
				s := newAStream(w, "")
				s.ping()
				aEvent(w, "error", overloaded)
			},
			func(w http.ResponseWriter, r *http.Request) {
				s := newAStream(w, "")
				s.text("second try")
				s.end("end_turn", "")
			})
		var got string
		var waits []time.Duration
		resp, err := f.engine(t, &waits).Stream(context.Background(), Request{}, func(d string) { got += d })
		if err != nil || resp.Text != "second try" || got != "second try" {
			t.Fatalf("resp %q, streamed %q, err %v", resp.Text, got, err)
		}
		if len(waits) != 1 {
			t.Errorf("waits = %v", waits)
		}
	})
	t.Run("overload after output is returned", func(t *testing.T) {
		f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
			s := newAStream(w, "")
			aEvent(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			aEvent(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half"}}`)
			aEvent(s.w, "error", overloaded)
		})
		var got string
		_, err := f.engine(t, nil).Stream(context.Background(), Request{}, func(d string) { got += d })
		var ae *AnthropicError
		if !errors.As(err, &ae) || ae.StatusCode != 529 || !errors.Is(err, ErrTransient) || got != "half" {
			t.Fatalf("err %v, streamed %q", err, got)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("invalid request in stream is fatal", func(t *testing.T) {
		f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
			newAStream(w, "")
			aEvent(w, "error", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
		})
		_, err := f.engine(t, nil).Stream(context.Background(), Request{}, nil)
		if err == nil || errors.Is(err, ErrTransient) || !strings.Contains(err.Error(), "prompt is too long") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestAnthropicCutStreamIsTransient(t *testing.T) {
	for _, cut := range []string{"mid-message", "mid-event"} {
		t.Run(cut, func(t *testing.T) {
			f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
				s := newAStream(w, "")
				s.text("partial")
				if cut == "mid-event" {
					io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_re")
					w.(http.Flusher).Flush()
				}
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			})
			var got string
			_, err := f.engine(t, nil).Stream(context.Background(), Request{}, func(d string) { got += d })
			if !errors.Is(err, ErrTransient) {
				t.Fatalf("err = %v, want ErrTransient", err)
			}
			if got != "partial" {
				t.Errorf("streamed %q before the cut", got)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("a cut stream was retried by the engine: %d requests", n)
			}
		})
	}
}

func TestAnthropicNotAnEventStream(t *testing.T) {
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","content":[]}`)
	})
	_, err := f.engine(t, nil).Stream(context.Background(), Request{}, nil)
	if err == nil || errors.Is(err, ErrTransient) || !strings.Contains(err.Error(), "event stream") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnthropicCancelStopsPromptly(t *testing.T) {
	clientGone := make(chan struct{})
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, "")
		aEvent(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		aEvent(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"thinking"}}`)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(clientGone)
				return
			case <-tick.C:
				s.ping()
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	first := make(chan struct{}, 1)
	e := f.engine(t, nil)
	go func() {
		_, err := e.Stream(ctx, Request{}, func(string) {
			select {
			case first <- struct{}{}:
			default:
			}
		})
		done <- err
	}()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no delta received")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransient) {
			t.Errorf("err = %v, want context.Canceled and not transient", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
	select {
	case <-clientGone:
	case <-time.After(10 * time.Second):
		t.Error("the server never saw the client go away")
	}
}

// TestAnthropicFollowsNoRedirect: the key in x-api-key never reaches a
// host the base URL redirects to.
func TestAnthropicFollowsNoRedirect(t *testing.T) {
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store("request", r.Header.Get("x-api-key"))
		s := newAStream(w, "")
		s.end("end_turn", "")
	}))
	defer other.Close()
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/messages", http.StatusTemporaryRedirect)
	})
	_, err := f.engine(t, nil).Stream(context.Background(), Request{}, nil)
	var ae *AnthropicError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTemporaryRedirect || errors.Is(err, ErrTransient) {
		t.Errorf("err = %v, want a fatal HTTP 307", err)
	}
	if v, ok := leaked.Load("request"); ok {
		t.Errorf("the redirect was followed (x-api-key %q sent to another host)", v)
	}
}

// TestAnthropicBoundsTheStream: a server that never stops sending is cut
// off with a fatal error, not buffered without end.
func TestAnthropicBoundsTheStream(t *testing.T) {
	endless := io.MultiReader(strings.NewReader("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"),
		strings.NewReader("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\"}}\n\n"),
		repeatReader("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}\n\n"))
	_, err := decodeAnthropicStream(&capReader{r: endless, left: 1 << 20}, nil)
	if !errors.Is(err, errStreamTooLarge) || errors.Is(err, ErrTransient) {
		t.Fatalf("err = %v, want errStreamTooLarge and not transient", err)
	}
}

// repeatReader yields s forever.
func repeatReader(s string) io.Reader { return &repeater{s: s} }

type repeater struct {
	s   string
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}

// TestAnthropicConcurrentStreams: one engine serves parallel turns.
func TestAnthropicConcurrentStreams(t *testing.T) {
	f := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
		s := newAStream(w, "")
		s.ping()
		s.text("reply ", "to a turn")
		s.end("end_turn", "")
	})
	e := f.engine(t, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("turn %d", i)
			resp, err := e.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: want}}}, nil)
			if err != nil || resp.Text != "reply to a turn" {
				t.Errorf("stream %d: %q %v", i, resp.Text, err)
			}
		}()
	}
	wg.Wait()
	if n := len(f.requests()); n != 8 {
		t.Errorf("%d requests", n)
	}
	for _, r := range f.requests() {
		if !strings.Contains(r.Raw, `"text":"turn `) {
			t.Errorf("request lost its prompt: %s", r.Raw)
		}
	}
}

func TestAnthropicConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	e, err := NewAnthropic(AnthropicConfig{BaseURL: u, Model: "m", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Stream(context.Background(), Request{}, nil); !errors.Is(err, ErrTransient) {
		t.Errorf("err = %v, want ErrTransient", err)
	}
}

func TestAnthropicMalformedStream(t *testing.T) {
	for name, body := range map[string]string{
		"not json":         "event: message_start\ndata: {nope\n\n",
		"delta unstarted":  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		"start sans index": "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\"}}\n\n",
	} {
		_, err := decodeAnthropicStream(strings.NewReader(body), nil)
		if err == nil || errors.Is(err, ErrTransient) {
			t.Errorf("%s: err = %v, want a fatal error", name, err)
		}
	}
	// Unknown event and block types are skipped; CRLF and comments are fine.
	body := ": hello\r\nevent: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\r\n\r\n" +
		"event: future_event\ndata: {\"type\":\"future_event\"}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\"}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"ok\"}}\n\n" +
		"data: {\"type\":\"message_stop\"}\n\n"
	var got string
	resp, err := decodeAnthropicStream(strings.NewReader(body), func(d string) { got += d })
	if err != nil || resp.Text != "ok" || got != "ok" || len(resp.ToolCalls) != 0 {
		t.Errorf("resp %+v, streamed %q, err %v", resp, got, err)
	}
}

func TestNewAnthropic(t *testing.T) {
	for _, c := range []struct {
		cfg      AnthropicConfig
		endpoint string
		err      string
	}{
		{AnthropicConfig{Model: "m"}, "https://api.anthropic.com/v1/messages", ""},
		{AnthropicConfig{Model: "m", BaseURL: "http://127.0.0.1:9/"}, "http://127.0.0.1:9/v1/messages", ""},
		{AnthropicConfig{Model: "m", BaseURL: "http://proxy/anthropic/v1"}, "http://proxy/anthropic/v1/messages", ""},
		{AnthropicConfig{}, "", "no model"},
		{AnthropicConfig{Model: "m", BaseURL: "ftp://x"}, "", "not an absolute http(s) URL"},
		{AnthropicConfig{Model: "m", BaseURL: "--help"}, "", "not an absolute http(s) URL"},
		{AnthropicConfig{Model: "m", MaxTokens: -1}, "", "negative"},
	} {
		e, err := NewAnthropic(c.cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.err)
			}
			continue
		}
		if err != nil || e.endpoint != c.endpoint || e.Name() != "anthropic" {
			t.Errorf("%+v: %v, endpoint %q", c.cfg, err, e.endpoint)
		}
	}
}

func TestAnthropicConfigFromEnvAndNewEngine(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_BASE_URL":              "http://conventional",
		"PLANBRIDGE_ANTHROPIC_BASE_URL":   "http://planbridge",
		"ANTHROPIC_API_KEY":               "k-conventional",
		"ANTHROPIC_MODEL":                 "claude-env",
		"PLANBRIDGE_ANTHROPIC_MAX_TOKENS": "1000",
	}
	get := func(k string) string { return env[k] }
	want := AnthropicConfig{BaseURL: "http://planbridge", APIKey: "k-conventional", Model: "claude-env", MaxTokens: 1000}
	if got := AnthropicConfigFromEnv(get); got != want {
		t.Errorf("from env %+v, want %+v", got, want)
	}
	eng, err := NewEngine(EngineConfig{Kind: "anthropic", Model: "claude-init", APIKey: "k-init"}, get)
	if err != nil {
		t.Fatal(err)
	}
	a := eng.(*Anthropic)
	if a.model != "claude-init" || a.apiKey != "k-init" || a.endpoint != "http://planbridge/v1/messages" || a.maxTokens != 1000 {
		t.Errorf("engine %+v", a)
	}
	if _, err := NewEngine(EngineConfig{Kind: "anthropic"}, func(string) string { return "" }); err == nil {
		t.Error("an anthropic engine without a model was built")
	}
}

// TestAnthropicTurnRoundTripsThinking: through a real [Turn], the thinking
// block and tool_use of the first response come back in the second request,
// followed by the tool's result, and usage adds up cache counts.
func TestAnthropicTurnRoundTripsThinking(t *testing.T) {
	f := newFakeAnthropic(t,
		func(w http.ResponseWriter, r *http.Request) {
			s := newAStream(w, `{"input_tokens":3,"cache_creation_input_tokens":100,"output_tokens":1}`)
			s.thinking("SIG", "need ", "to look")
			s.tool("toolu_X", "read_file", `{"path":"a.txt"}`, 4)
			s.end("tool_use", `{"output_tokens":10}`)
		},
		func(w http.ResponseWriter, r *http.Request) {
			s := newAStream(w, `{"input_tokens":4,"cache_read_input_tokens":100,"output_tokens":1}`)
			s.thinking("SIG2", "done")
			s.text("It says alpha.")
			s.end("end_turn", `{"output_tokens":20}`)
		})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := &textSink{}
	turn := &Turn{
		Engine: f.engine(t, nil), Effort: "low",
		Messages: []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "read a.txt"}},
		Tools:    NewRegistry(DefaultTools()...), Gate: Gate{Mode: ModeAsk},
		Env: Env{Roots: Roots{Workspace: dir, Work: t.TempDir()}}, Sink: sink,
	}
	res, err := turn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{InputTokens: 207, OutputTokens: 30, CacheCreationInputTokens: 100, CacheReadInputTokens: 100}); res.Usage != want {
		t.Errorf("turn usage %+v, want %+v", res.Usage, want)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs, _ := json.Marshal(reqs[1].Body["messages"])
	want := `{"content":[{"signature":"SIG","thinking":"need to look","type":"thinking"},{"id":"toolu_X","input":{"path":"a.txt"},"name":"read_file","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"cache_control":{"type":"ephemeral"},"content":"alpha\n","tool_use_id":"toolu_X","type":"tool_result"}],"role":"user"}]`
	if !strings.HasSuffix(string(msgs), want) {
		t.Errorf("second request messages\n%s\nwant suffix\n%s", msgs, want)
	}
	if th, _ := json.Marshal(reqs[1].Body["thinking"]); string(th) != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("thinking %s", th)
	}
	if strings.Contains(strings.Join(sink.text, ""), "need to look") {
		t.Error("thinking reached the sink as assistant text")
	}
	if last := res.Messages[len(res.Messages)-1]; last.Content != "It says alpha." || len(last.Thinking) != 1 {
		t.Errorf("final message %+v", last)
	}
}

// textSink records the text a turn streams.
type textSink struct{ text []string }

func (s *textSink) Text(d string)                     { s.text = append(s.text, d) }
func (s *textSink) ResponseDone(string)               {}
func (s *textSink) ToolCall(ToolCall)                 {}
func (s *textSink) ToolResult(ToolCall, bool, string) {}
func (s *textSink) Blocked(ToolCall, string, string)  {}

// FuzzDecodeAnthropicStream checks that no byte sequence makes the decoder
// panic and that every successful result marshals.
func FuzzDecodeAnthropicStream(f *testing.F) {
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("data: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"thinking\"}}\n\ndata: {\"type\":\"error\",\"error\":null}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		resp, err := decodeAnthropicStream(strings.NewReader(body), func(string) {})
		if err != nil {
			return
		}
		m := Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Thinking: resp.Thinking}
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		e := &Anthropic{model: "m", maxTokens: 1}
		ar, err := e.buildRequest(Request{Effort: "low", Messages: []Message{{Role: RoleUser, Content: "x"}, m, {Role: RoleUser, Content: "y"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(ar); err != nil {
			t.Fatalf("request does not marshal: %v", err)
		}
	})
}

// equivalentStreams returns the same response (200 text deltas and a tool
// call whose input arrives in 100 pieces) as an Anthropic Messages stream
// and as a Chat Completions stream.
func equivalentStreams() (anthropic, openai string) {
	var a, o strings.Builder
	a.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	a.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < 200; i++ {
		d := jsonString(fmt.Sprintf("word %04d, more ", i))
		fmt.Fprintf(&a, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", d)
		fmt.Fprintf(&o, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", d)
	}
	a.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	a.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"write_file\",\"input\":{}}}\n\n")
	o.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]}}]}\n\n")
	input := `{"path":"notes.txt","content":"` + strings.Repeat("abcdefgh", 50) + `"}`
	for _, p := range pieces(input, len(input)/100+1) {
		q := jsonString(p)
		fmt.Fprintf(&a, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", q)
		fmt.Fprintf(&o, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":%s}}]}}]}\n\n", q)
	}
	a.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	a.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":300}}\n\n")
	a.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	o.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
	o.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":300}}\n\ndata: [DONE]\n\n")
	return a.String(), o.String()
}

func TestEquivalentStreamsDecodeAlike(t *testing.T) {
	a, o := equivalentStreams()
	ra, err := decodeAnthropicStream(strings.NewReader(a), nil)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := decodeStream(strings.NewReader(o), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Text != ro.Text || !reflect.DeepEqual(ra.ToolCalls, ro.ToolCalls) || ra.Usage != ro.Usage {
		t.Errorf("decoders disagree:\n%+v\n%+v", ra, ro)
	}
}

func BenchmarkAnthropicDecode(b *testing.B) {
	a, _ := equivalentStreams()
	b.SetBytes(int64(len(a)))
	for b.Loop() {
		if _, err := decodeAnthropicStream(strings.NewReader(a), func(string) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIDecode(b *testing.B) {
	_, o := equivalentStreams()
	b.SetBytes(int64(len(o)))
	for b.Loop() {
		if _, err := decodeStream(strings.NewReader(o), func(string) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// conversationFrom builds a request from fuzz bytes: any sequence of
// system, user, assistant (text, thinking, tool calls with good, bad,
// duplicate or missing ids, arguments that are not objects) and tool
// messages (answering a call or nothing), ending as a turn's requests end,
// with a user or tool message.
func conversationFrom(data []byte) Request {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	texts := []string{"", " ", "hello", "x<y>&\"z\"", "naïve\n"}
	ids := []string{"toolu_a", "toolu_b", "", "call:1", "dup", "dup"}
	args := []string{`{"path":"a"}`, `{}`, `"not an object"`, ``, `[1]`}
	req := Request{Effort: []string{"", "low", "high"}[next()%3]}
	if next()%2 == 0 {
		req.Messages = append(req.Messages, Message{Role: RoleSystem, Content: texts[next()%len(texts)]})
	}
	var calls []string
	for n := next() % 14; n > 0; n-- {
		switch next() % 6 {
		case 0:
			req.Messages = append(req.Messages, Message{Role: RoleUser, Content: texts[next()%len(texts)]})
		case 1, 2:
			m := Message{Role: RoleAssistant, Content: texts[next()%len(texts)]}
			if next()%2 == 0 {
				m.Thinking = []ThinkingBlock{{Text: "t", Signature: "sig"}}
			}
			calls = nil
			for k := next() % 3; k > 0; k-- {
				id := ids[next()%len(ids)]
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "read_file", Arguments: json.RawMessage(args[next()%len(args)])})
				calls = append(calls, id)
			}
			req.Messages = append(req.Messages, m)
		case 3, 4:
			id := ids[next()%len(ids)]
			if len(calls) > 0 && next()%4 != 0 {
				id = calls[0]
				calls = calls[1:]
			}
			req.Messages = append(req.Messages, Message{Role: RoleTool, ToolCallID: id, Name: "read_file", Content: texts[next()%len(texts)]})
		case 5:
			req.Messages = append(req.Messages, Message{Role: RoleSystem, Content: texts[next()%len(texts)]})
		}
	}
	if n := len(req.Messages); n == 0 || req.Messages[n-1].Role == RoleAssistant || req.Messages[n-1].Role == RoleSystem {
		req.Messages = append(req.Messages, Message{Role: RoleUser, Content: "go on"})
	}
	for k := next() % 3; k > 0; k-- {
		req.Tools = append(req.Tools, ToolSpec{Name: fmt.Sprintf("tool_%d", k), Parameters: json.RawMessage(args[next()%len(args)])})
	}
	return req
}

// FuzzAnthropicRequestIsValid: whatever the conversation, the request built
// from it is one the Messages API accepts (anthropictest models its
// validation), and no text or tool output is dropped on the way.
func FuzzAnthropicRequestIsValid(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 8, 1, 2, 1, 0, 2, 0, 0, 0, 1, 0, 3, 1, 0})
	f.Add([]byte{2, 1, 3, 1, 0, 0, 2, 3, 1, 0, 3, 1, 2, 0, 3, 0, 0, 5, 2})
	f.Add([]byte{1, 1, 5, 2, 2, 0, 1, 0, 1, 3, 1, 0, 0, 4, 0, 1, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		req := conversationFrom(data)
		e := &Anthropic{model: "m", maxTokens: DefaultAnthropicMaxTokens}
		ar, err := e.buildRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(ar)
		if err != nil {
			t.Fatal(err)
		}
		if err := anthropictest.Validate(raw); err != nil {
			conv, _ := json.Marshal(req.Messages)
			t.Fatalf("the API would reject the request: %v\nconversation %s\nrequest %s", err, conv, raw)
		}
		for _, m := range req.Messages {
			if strings.TrimSpace(m.Content) == "" {
				continue
			}
			q, _ := json.Marshal(m.Content)
			if !strings.Contains(string(raw), string(q[1:len(q)-1])) {
				t.Fatalf("%s message %q was dropped: %s", m.Role, m.Content, raw)
			}
		}
	})
}

func TestAnthropicInputSchema(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`: `{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"properties":{"a":{"type":"string"}}}`:                 `{"properties":{"a":{"type":"string"}},"type":"object"}`,
		`{"type":"string"}`:                                      `{"type":"object","properties":{}}`,
		``:                                                       `{"type":"object","properties":{}}`,
		`[1]`:                                                    `{"type":"object","properties":{}}`,
		`{"type":`:                                               `{"type":"object","properties":{}}`,
	} {
		if got := string(inputSchema(json.RawMessage(in))); got != want {
			t.Errorf("inputSchema(%s) = %s, want %s", in, got, want)
		}
	}
}
