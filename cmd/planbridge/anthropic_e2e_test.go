package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"planbridge/internal/agent/anthropictest"
	"planbridge/rpc"
)

// fakeMessages is a local server speaking the Anthropic Messages streaming
// protocol (the real event sequence), scripted by what each request asks:
// a Plan request (no write_file offered) first tries to write, then
// proposes once it has the refusal; an implementation request writes, then
// reports. Its very first answer is a 429 with retry-after, which the
// engine must wait out and retry.
type fakeMessages struct {
	key  string
	mu   sync.Mutex
	reqs []anthReq
}

type anthReq struct {
	header http.Header
	body   struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Thinking  *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
		System   []map[string]any `json:"system"`
		Tools    []map[string]any `json:"tools"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	raw string
}

func (r *anthReq) offers(tool string) bool {
	for _, t := range r.body.Tools {
		if t["name"] == tool {
			return true
		}
	}
	return false
}

// lastResult is the tool_result block of the last message, if any.
func (r *anthReq) lastResult() map[string]any {
	if n := len(r.body.Messages); n > 0 {
		for _, b := range r.body.Messages[n-1].Content {
			if b["type"] == "tool_result" {
				return b
			}
		}
	}
	return nil
}

const planProposal = "Checked.\n<proposed_plan>\n# Add notes from the Anthropic engine\n\n## Key Changes\n- Create notes.txt\n</proposed_plan>\n"

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != f.key {
		w.WriteHeader(401)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := anthReq{header: r.Header.Clone(), raw: string(raw)}
	if err := json.Unmarshal(raw, &req.body); err != nil {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	first := len(f.reqs) == 1
	f.mu.Unlock()
	if err := anthropictest.Validate(raw); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, "fake API: "+err.Error())
		return
	}
	if strings.Contains(req.raw, "trigger-error") {
		// A server (or proxy) that echoes the key in its error message.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"rejected request with x-api-key %s"}}`, f.key)
		return
	}
	if first {
		w.Header().Set("retry-after", "0")
		w.WriteHeader(429)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		w.(http.Flusher).Flush()
	}
	idx := 0
	block := func(start string, deltas ...string) {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, idx, start))
		for _, d := range deltas {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, idx, d))
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		idx++
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	text := func(s string) {
		var ds []string
		for len(s) > 0 {
			n := min(len(s), 9)
			ds = append(ds, `{"type":"text_delta","text":`+q(s[:n])+`}`)
			s = s[n:]
		}
		block(`{"type":"text","text":""}`, ds...)
	}
	tool := func(id, name, input string) {
		var ds []string
		for len(input) > 0 {
			n := min(len(input), 4) // ASCII input: any byte split is a rune split
			ds = append(ds, `{"type":"input_json_delta","partial_json":`+q(input[:n])+`}`)
			input = input[n:]
		}
		block(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":{}}`, id, name), ds...)
	}
	thinking := func(sig, s string) {
		block(`{"type":"thinking","thinking":"","signature":""}`,
			`{"type":"thinking_delta","thinking":`+q(s)+`}`, `{"type":"signature_delta","signature":`+q(sig)+`}`)
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","model":`+q(req.body.Model)+
		`,"content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0,"output_tokens":1}}}`)
	ev("ping", `{"type": "ping"}`)
	stop := "end_turn"
	switch plan, result := !req.offers("write_file"), req.lastResult(); {
	case strings.Contains(req.raw, "after crash"):
		text("Recovered.\n")
	case strings.Contains(req.raw, "crash-loop") && result == nil:
		thinking("sig-crash", "Read first.")
		tool("toolu_crash_read", "read_file", `{"path":"README"}`)
		stop = "tool_use"
	case strings.Contains(req.raw, "crash-loop"):
		// Stream a little, then hang until the client goes away (it is
		// killed).
		text("Half an answer")
		<-r.Context().Done()
		return
	case plan && result == nil:
		thinking("sig-plan", "The person wants notes; try writing them.")
		text("Writing notes first.\n")
		tool("toolu_plan_write", "write_file", `{"path":"notes.txt","content":"written in Plan\n"}`)
		stop = "tool_use"
	case plan:
		thinking("sig-plan-2", "Refused; propose instead.")
		text(planProposal)
	case result == nil:
		text("Implementing.\n")
		tool("toolu_impl_write", "write_file", `{"path":"notes.txt","content":"notes from the anthropic engine\n"}`)
		stop = "tool_use"
	default:
		text("Done: notes.txt written.\n")
	}
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":40}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

func (f *fakeMessages) requests() []anthReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]anthReq(nil), f.reqs...)
}

// TestAnthropicEngineThroughTheBinary: initialize selects the anthropic
// engine against a local Messages server. A Plan turn survives a 429, tries
// a write (refused by the gate, counted) and proposes; the card shows the
// proposal; the accepted implementation's write_file really writes. The
// requests carry the key, the API version, cache breakpoints, the tools,
// the thinking round-trip and tool_result blocks, and the key is written
// nowhere under the state directory, not even when the server echoes it in
// an error.
func TestAnthropicEngineThroughTheBinary(t *testing.T) {
	ctx := ctxT(t)
	const key = "sk-ant-api03-never-on-disk-0123456789abcdef"
	fake := &fakeMessages{key: key}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	before := snapshot(t, ws)
	state := t.TempDir()
	p := startServe(t, state, "--log", filepath.Join(state, "serve.log"))
	err := p.c.Call(ctx, "initialize", map[string]any{
		"engine": map[string]string{"kind": "anthropic", "base_url": srv.URL, "model": "claude-fake-1", "api_key": key},
		"models": map[string]any{"default": map[string]string{"model": "claude-fake-1", "effort": "medium"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan add notes"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)

	var st struct {
		Plan         bool  `json:"plan"`
		BlockedTotal int64 `json:"blocked_total"`
	}
	if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Plan || st.BlockedTotal != 1 {
		t.Errorf("after the Plan turn: %+v, want in Plan with 1 blocked", st)
	}
	if after := snapshot(t, ws); fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("workspace changed in Plan:\nbefore %v\nafter  %v", before, after)
	}
	v := getApproval(t, ctx, p.c, s.ID)
	if !v.Pending || v.Title != "Add notes from the Anthropic engine" {
		t.Fatalf("approval %+v", v)
	}

	plan := fake.requests()
	if len(plan) != 3 {
		t.Fatalf("%d requests in the Plan turn, want 3 (429, write attempt, proposal)", len(plan))
	}
	if plan[0].raw != plan[1].raw {
		t.Error("the request retried after 429 differs from the first")
	}
	follow := plan[2]
	res := follow.lastResult()
	if res == nil || res["tool_use_id"] != "toolu_plan_write" || !strings.Contains(fmt.Sprint(res["content"]), "plan_mode_blocked") {
		t.Errorf("Plan follow-up does not carry the refusal as a tool_result: %v", res)
	}
	asst := follow.body.Messages[len(follow.body.Messages)-2]
	if asst.Role != "assistant" || len(asst.Content) != 3 || asst.Content[0]["type"] != "thinking" || asst.Content[0]["signature"] != "sig-plan" ||
		asst.Content[2]["type"] != "tool_use" || asst.Content[2]["id"] != "toolu_plan_write" {
		t.Errorf("the assistant's thinking and tool_use were not sent back: %v", asst)
	}
	for i, r := range plan[1:] {
		if r.offers("write_file") || !r.offers("read_file") {
			t.Errorf("Plan request %d offers the wrong tools: %v", i, r.body.Tools)
		}
		if r.body.Thinking == nil || r.body.Thinking.Type != "enabled" || r.body.Thinking.BudgetTokens != 8192 || r.body.MaxTokens <= 8192 {
			t.Errorf("effort medium not mapped to thinking: %+v max_tokens %d", r.body.Thinking, r.body.MaxTokens)
		}
	}

	// Accept with edits: the implementation's write_file runs.
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "edits"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), "done") }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "notes from the anthropic engine\n" {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	all := fake.requests()
	impl := all[len(plan):]
	if len(impl) != 2 || !impl[0].offers("write_file") {
		t.Fatalf("%d implementation requests", len(impl))
	}
	if res := impl[1].lastResult(); res == nil || res["tool_use_id"] != "toolu_impl_write" || res["is_error"] == true {
		t.Errorf("implementation follow-up tool_result: %v", res)
	}

	for i, r := range all {
		if r.header.Get("x-api-key") != key || r.header.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("request %d headers: version %q, key present %v", i, r.header.Get("anthropic-version"), r.header.Get("x-api-key") != "")
		}
		b := r.body
		if b.Model != "claude-fake-1" || !b.Stream {
			t.Errorf("request %d: model %q stream %v", i, b.Model, b.Stream)
		}
		if n := len(b.System); n == 0 || b.System[n-1]["cache_control"] == nil || !strings.Contains(fmt.Sprint(b.System[0]["text"]), ws) {
			t.Errorf("request %d: system prompt without its cache breakpoint or workspace: %v", i, b.System)
		}
		if n := len(b.Tools); n == 0 || b.Tools[n-1]["cache_control"] == nil {
			t.Errorf("request %d: tools without a cache breakpoint", i)
		}
		for _, tl := range b.Tools {
			if sc, _ := tl["input_schema"].(map[string]any); sc["type"] != "object" {
				t.Errorf("request %d: tool %v has no object input_schema", i, tl["name"])
			}
		}
		last := b.Messages[len(b.Messages)-1]
		if last.Role != "user" || last.Content[len(last.Content)-1]["cache_control"] == nil {
			t.Errorf("request %d: the conversation prefix has no cache breakpoint", i)
		}
		if n := strings.Count(r.raw, `"cache_control"`); n > 4 {
			t.Errorf("request %d: %d cache breakpoints, the API allows 4", i, n)
		}
	}

	// A fatal error that echoes the key reaches the person redacted, and is
	// persisted redacted.
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "trigger-error please"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 3)
	shown := false
	for _, e := range p.c.Events() {
		if strings.Contains(string(e.Data), key) {
			t.Errorf("event %s carries the API key: %s", e.Kind, e.Data)
		}
		if e.Kind == "error" && strings.Contains(string(e.Data), "invalid_request_error: rejected request with x-api-key [redacted]") {
			shown = true
		}
	}
	if !shown {
		t.Error("the provider's error did not reach the client")
	}

	p.stop()
	files := 0
	filepath.Walk(state, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files++
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
				t.Errorf("the API key was written to %s", path)
			}
		}
		return nil
	})
	if files < 2 {
		t.Errorf("only %d files under the state directory; the key check saw nothing", files)
	}
	if strings.Contains(p.stderr.String(), key) {
		t.Error("the API key reached stderr")
	}
}

// TestDoctorAnthropic: doctor describes the anthropic engine the
// environment configures without printing the key, and fails without a
// model.
func TestDoctorAnthropic(t *testing.T) {
	const key = "sk-ant-doctor-secret-42"
	run := func(env ...string) (string, error) {
		cmd := exec.Command(binary, "doctor", "--engine", "anthropic", "--state-dir", t.TempDir())
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run("PLANBRIDGE_ANTHROPIC_MODEL=claude-doc", "ANTHROPIC_API_KEY="+key, "ANTHROPIC_BASE_URL=http://127.0.0.1:9")
	if err != nil || !strings.Contains(out, `ok   engine     anthropic http://127.0.0.1:9 model "claude-doc", API key from the environment`) {
		t.Errorf("doctor: %v\n%s", err, out)
	}
	if strings.Contains(out, key) {
		t.Error("doctor printed the API key")
	}
	out, err = run("PLANBRIDGE_ANTHROPIC_MODEL=", "ANTHROPIC_MODEL=")
	if err == nil || !strings.Contains(out, "FAIL engine     anthropic: no model configured") {
		t.Errorf("doctor without a model: %v\n%s", err, out)
	}
}

// TestAnthropicConversationAfterCrash: the process is killed in the middle
// of a tool loop (the model's second request is streaming); after a
// restart the next prompt's request is one the API accepts, whatever the
// store kept of the interrupted loop.
func TestAnthropicConversationAfterCrash(t *testing.T) {
	ctx := ctxT(t)
	const key = "sk-ant-crash-0123456789"
	fake := &fakeMessages{key: key}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	initialize := func(p *proc) {
		t.Helper()
		err := p.c.Call(ctx, "initialize", map[string]any{
			"engine": map[string]string{"kind": "anthropic", "base_url": srv.URL, "model": "claude-fake-1", "api_key": key},
			"models": map[string]any{"default": map[string]string{"model": "claude-fake-1", "effort": "low"}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	state := t.TempDir()
	p := startServe(t, state)
	initialize(p)
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "crash-loop: read the README"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" && strings.Contains(string(e.Data), "Half") }); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p2 := startServe(t, state)
	initialize(p2)
	if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "after crash: go on"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p2.c, 1)
	for _, e := range p2.c.Events() {
		if e.Kind == "error" || e.Kind == "turn_end" && strings.Contains(string(e.Data), `"ok":false`) {
			t.Fatalf("the request after the crash failed: %s", e.Data)
		}
	}
	reqs := fake.requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.raw, "crash-loop: read the README") || !strings.Contains(last.raw, "after crash: go on") {
		t.Errorf("the request after the crash lost the conversation: %s", last.raw)
	}
	if last.body.Thinking == nil {
		t.Error("a new prompt after the crash should think again (effort low)")
	}
}
