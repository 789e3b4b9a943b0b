package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sse writes one server-sent event carrying data and flushes it, as a real
// Chat Completions server does per chunk.
func sse(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// streamServer serves each element of events as one SSE event, then [DONE].
func streamServer(t *testing.T, events ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		for _, e := range events {
			sse(w, e)
		}
		sse(w, "[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestEngine(t *testing.T, srv *httptest.Server) *OpenAI {
	t.Helper()
	e, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "test-model", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func textChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

const (
	stopChunk  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	usageChunk = `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`
)

func TestOpenAIStreamsText(t *testing.T) {
	srv := streamServer(t,
		`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		textChunk("Hel"), textChunk("lo, "), textChunk("wörld"), textChunk("!"),
		stopChunk, usageChunk)
	var deltas []string
	resp, err := newTestEngine(t, srv).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}},
		func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hel", "lo, ", "wörld", "!"}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if resp.Text != "Hello, wörld!" {
		t.Errorf("Text = %q", resp.Text)
	}
	if len(resp.ToolCalls) != 0 {
		t.Errorf("ToolCalls = %v, want none", resp.ToolCalls)
	}
	if want := (Usage{InputTokens: 42, OutputTokens: 7}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestOpenAIToolCallsInPieces(t *testing.T) {
	// Two parallel calls, ids and names on the first piece, arguments split
	// mid-token and interleaved across chunks, as OpenAI streams them.
	srv := streamServer(t,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me look."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"grep","arguments":"{\"pattern\":"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"main"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"TODO\", \"path\": \".\"}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":".go\"}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_C","type":"function","function":{"name":"list_dir"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		usageChunk)
	resp, err := newTestEngine(t, srv).Stream(context.Background(), Request{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_A", Name: "read_file", Arguments: json.RawMessage(`{"path": "main.go"}`)},
		{ID: "call_B", Name: "grep", Arguments: json.RawMessage(`{"pattern":"TODO", "path": "."}`)},
		{ID: "call_C", Name: "list_dir", Arguments: json.RawMessage(`{}`)},
	}
	if len(resp.ToolCalls) != len(want) {
		t.Fatalf("ToolCalls = %+v, want %d calls", resp.ToolCalls, len(want))
	}
	for i, w := range want {
		g := resp.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	if resp.Text != "Let me look." {
		t.Errorf("Text = %q", resp.Text)
	}
	if resp.Usage.InputTokens != 42 || resp.Usage.OutputTokens != 7 {
		t.Errorf("Usage = %+v", resp.Usage)
	}
	// The response must survive a round trip through the transcript.
	if _, err := json.Marshal(Message{Role: RoleAssistant, ToolCalls: resp.ToolCalls}); err != nil {
		t.Errorf("tool calls do not marshal: %v", err)
	}
}

func TestOpenAIStreamDecoding(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantText string
		wantArgs string // arguments of the single tool call, if any
		wantErr  string // substring; "" means success
		transint bool
	}{
		{
			name:     "comments keepalives and CRLF",
			body:     ": OPENROUTER PROCESSING\r\n\r\nevent: message\r\ndata: " + textChunk("a") + "\r\n\r\n:\n\n" + "data:" + textChunk("b") + "\n\ndata: " + stopChunk + "\n\ndata: [DONE]\n\n",
			wantText: "ab",
		},
		{
			name:     "finish_reason without DONE is complete",
			body:     "data: " + textChunk("x") + "\n\ndata: " + stopChunk + "\n\n",
			wantText: "x",
		},
		{
			name:     "DONE without trailing blank line",
			body:     "data: " + textChunk("x") + "\n\ndata: [DONE]",
			wantText: "x",
		},
		{
			name:     "truncated stream",
			body:     "data: " + textChunk("x") + "\n\n",
			wantErr:  "ended before completion",
			transint: true,
		},
		{
			name:     "cut mid-event",
			body:     "data: " + textChunk("x") + "\n\ndata: {\"choices\":[{\"delta\":",
			wantErr:  "ended before completion",
			transint: true,
		},
		{
			name:    "malformed event",
			body:    "data: {not json}\n\n",
			wantErr: "malformed stream event",
		},
		{
			name:    "error inside stream",
			body:    "data: " + textChunk("x") + "\n\ndata: {\"error\":{\"message\":\"upstream overloaded\",\"code\":502}}\n\n",
			wantErr: "upstream overloaded", transint: true,
		},
		{
			name:     "invalid tool arguments become a JSON string",
			body:     `data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			wantArgs: `"{\"a\":"`,
		},
		{
			name:     "tool call pieces without index",
			body:     `data: {"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\""}}]}}]}` + "\n\n" + `data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			wantArgs: `{"a":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := decodeStream(strings.NewReader(tt.body), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				if got := errors.Is(err, ErrTransient); got != tt.transint {
					t.Errorf("errors.Is(err, ErrTransient) = %v, want %v (err: %v)", got, tt.transint, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", resp.Text, tt.wantText)
			}
			if tt.wantArgs != "" {
				if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != tt.wantArgs {
					t.Errorf("ToolCalls = %+v, want one with arguments %s", resp.ToolCalls, tt.wantArgs)
				}
			}
		})
	}
}

func TestOpenAIErrorResponses(t *testing.T) {
	tests := []struct {
		status    int
		body      string
		wantMsg   string
		transient bool
	}{
		{400, `{"error":{"message":"Invalid schema for function 'grep'","type":"invalid_request_error","param":"tools[3]","code":null}}`, "Invalid schema for function 'grep'", false},
		{401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, "Incorrect API key provided", false},
		{404, `{"error":"model \"nope\" not found, try pulling it first"}`, `model "nope" not found`, false},
		{429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, "Rate limit reached", true},
		{500, `{"error":{"message":"The server had an error while processing your request."}}`, "server had an error", true},
		{503, `upstream connect error`, "upstream connect error", true},
		{502, ``, "502 Bad Gateway", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := newTestEngine(t, srv).Stream(context.Background(), Request{}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want containing %q", err, tt.wantMsg)
			}
			if got := errors.Is(err, ErrTransient); got != tt.transient {
				t.Errorf("errors.Is(err, ErrTransient) = %v, want %v", got, tt.transient)
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status {
				t.Errorf("err = %#v, want *APIError with status %d", err, tt.status)
			}
		})
	}
}

func TestOpenAIConnectionResetMidStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		sse(w, textChunk("partial"))
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	defer srv.Close()
	var got string
	_, err := newTestEngine(t, srv).Stream(context.Background(), Request{}, func(d string) { got += d })
	if !errors.Is(err, ErrTransient) {
		t.Fatalf("err = %v, want ErrTransient", err)
	}
	if got != "partial" {
		t.Errorf("streamed %q before the reset, want %q", got, "partial")
	}
}

func TestOpenAIConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	e, err := NewOpenAI(OpenAIConfig{BaseURL: url, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Stream(context.Background(), Request{}, nil); !errors.Is(err, ErrTransient) {
		t.Errorf("err = %v, want ErrTransient", err)
	}
}

func TestOpenAICancelStopsPromptly(t *testing.T) {
	clientGone := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		sse(w, textChunk("thinking"))
		// Keep the stream open, with keepalives, until the client leaves.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(clientGone)
				return
			case <-release:
				return
			case <-tick.C:
				io.WriteString(w, ": keepalive\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		resp Response
		err  error
	}
	done := make(chan result, 1)
	firstDelta := make(chan struct{}, 1)
	e := newTestEngine(t, srv)
	go func() {
		resp, err := e.Stream(ctx, Request{}, func(string) {
			select {
			case firstDelta <- struct{}{}:
			default:
			}
		})
		done <- result{resp, err}
	}()

	select {
	case <-firstDelta:
	case <-time.After(5 * time.Second):
		t.Fatal("no delta received")
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("err = %v, want wrapping context.Canceled", r.err)
		}
		if errors.Is(r.err, ErrTransient) {
			t.Errorf("a cancellation must not look transient: %v", r.err)
		}
	case <-time.After(30 * time.Second): // a hang guard: the server never ends the stream itself
		t.Fatal("Stream did not return after cancel")
	}
	select {
	case <-clientGone:
	case <-time.After(30 * time.Second):
		t.Error("server handler never saw the client go away")
	}
}

func TestOpenAICancelBeforeHeaders(t *testing.T) {
	// Never answers, until the test ends: Stream can only return because
	// its context ended. The body must be consumed before the server
	// watches the connection and can notice the client leaving.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newTestEngine(t, srv).Stream(ctx, Request{}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want wrapping context.DeadlineExceeded", err)
	}
}

func TestOpenAIRequestShape(t *testing.T) {
	var (
		gotPath, gotAuth, gotCT string
		gotBody                 map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth, gotCT = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		if err := json.NewDecoder(r.Body).Decode(&gotBody); err != nil {
			t.Errorf("decoding request: %v", err)
		}
		sseHeaders(w)
		sse(w, stopChunk)
		sse(w, "[DONE]")
	}))
	defer srv.Close()

	req := Request{
		Effort: "high",
		Messages: []Message{
			{Role: RoleSystem, Content: "You are in Plan."},
			{Role: RoleUser, Content: "Look at main.go"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)},
				{ID: "call_2", Name: "list_dir"},
			}},
			{Role: RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "package main"},
			{Role: RoleTool, ToolCallID: "call_2", Name: "list_dir", Content: "main.go"},
		},
		Tools: []ToolSpec{{
			Name:        "read_file",
			Description: "Read a workspace file.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		}},
	}
	if _, err := newTestEngine(t, srv).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}

	if gotPath != "/v1/chat/completions" {
		t.Errorf("path = %q", gotPath)
	}
	if gotAuth != "Bearer sk-test" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	if gotCT != "application/json" {
		t.Errorf("Content-Type = %q", gotCT)
	}
	want := map[string]any{
		"model":            "test-model",
		"stream":           true,
		"stream_options":   map[string]any{"include_usage": true},
		"reasoning_effort": "high",
		"messages": []any{
			map[string]any{"role": "system", "content": "You are in Plan."},
			map[string]any{"role": "user", "content": "Look at main.go"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"main.go"}`}},
				map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "list_dir", "arguments": `{}`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "package main"},
			map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "main.go"},
		},
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{
				"name":        "read_file",
				"description": "Read a workspace file.",
				"parameters": map[string]any{
					"type":       "object",
					"properties": map[string]any{"path": map[string]any{"type": "string"}},
					"required":   []any{"path"},
				},
			}},
		},
	}
	if !reflect.DeepEqual(gotBody, want) {
		g, _ := json.MarshalIndent(gotBody, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("request body:\n%s\nwant:\n%s", g, w)
	}
}

func TestOpenAIRequestModelOverrideAndOmissions(t *testing.T) {
	var gotAuth string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, hasAuth := r.Header["Authorization"]
		if hasAuth {
			gotAuth = r.Header.Get("Authorization")
		}
		json.NewDecoder(r.Body).Decode(&gotBody)
		sseHeaders(w)
		sse(w, stopChunk)
		sse(w, "[DONE]")
	}))
	defer srv.Close()
	e, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/", Model: "default-model"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Stream(context.Background(), Request{Model: "override", Messages: []Message{{Role: RoleUser, Content: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if gotBody["model"] != "override" {
		t.Errorf("model = %v, want override", gotBody["model"])
	}
	for _, k := range []string{"reasoning_effort", "tools"} {
		if _, ok := gotBody[k]; ok {
			t.Errorf("%s sent although unset: %v", k, gotBody[k])
		}
	}
	if gotAuth != "" {
		t.Errorf("Authorization sent without a key: %q", gotAuth)
	}
}

func TestNewOpenAI(t *testing.T) {
	tests := []struct {
		name    string
		cfg     OpenAIConfig
		wantURL string
		wantErr string
	}{
		{"default base URL", OpenAIConfig{Model: "gpt-x"}, "https://api.openai.com/v1/chat/completions", ""},
		{"trailing slash", OpenAIConfig{BaseURL: "http://localhost:11434/v1/", Model: "llama"}, "http://localhost:11434/v1/chat/completions", ""},
		{"no model", OpenAIConfig{BaseURL: "http://localhost:8080/v1"}, "", "no model"},
		{"relative URL", OpenAIConfig{BaseURL: "localhost:8080", Model: "m"}, "", "not an absolute http(s) URL"},
		{"bad scheme", OpenAIConfig{BaseURL: "ftp://host/v1", Model: "m"}, "", "not an absolute http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewOpenAI(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.endpoint != tt.wantURL {
				t.Errorf("endpoint = %q, want %q", e.endpoint, tt.wantURL)
			}
			if e.Name() != "openai" {
				t.Errorf("Name = %q", e.Name())
			}
		})
	}
}

func TestOpenAIConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want OpenAIConfig
	}{
		{"empty", nil, OpenAIConfig{}},
		{
			"conventional names",
			map[string]string{"OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "k1", "OPENAI_MODEL": "ignored"},
			OpenAIConfig{BaseURL: "http://a/v1", APIKey: "k1"},
		},
		{
			"planbridge names win",
			map[string]string{
				"OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "k1",
				"PLANBRIDGE_OPENAI_BASE_URL": "http://b/v1", "PLANBRIDGE_OPENAI_API_KEY": "k2", "PLANBRIDGE_OPENAI_MODEL": "m",
			},
			OpenAIConfig{BaseURL: "http://b/v1", APIKey: "k2", Model: "m"},
		},
		{
			"blank planbridge value falls back",
			map[string]string{"PLANBRIDGE_OPENAI_API_KEY": "  ", "OPENAI_API_KEY": "k1"},
			OpenAIConfig{APIKey: "k1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OpenAIConfigFromEnv(func(k string) string { return tt.env[k] })
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzDecodeStream checks that no byte sequence makes the stream decoder
// panic and that every successful result marshals.
func FuzzDecodeStream(f *testing.F) {
	f.Add("data: " + textChunk("x") + "\n\ndata: [DONE]\n\n")
	f.Add(`data: {"choices":[{"delta":{"tool_calls":[{"index":3,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":"tool_calls"}]}` + "\n\n")
	f.Add(": ping\r\n\r\ndata: {\"error\":\"x\"}\n\n")
	f.Add(`data: {"choices":[{"delta":{"tool_calls":[{"index":-1},{"function":{"arguments":"1"}}]},"finish_reason":"stop"}]}` + "\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		resp, err := decodeStream(strings.NewReader(body), func(string) {})
		if err != nil {
			return
		}
		if _, err := json.Marshal(Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
	})
}
