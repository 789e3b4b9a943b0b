package main

import (
	"context"
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
	"testing"
	"time"

	"planbridge/acp"
	"planbridge/rpc"
)

// codexModel is a fake OpenAI Responses API (streaming) for Codex,
// scripted like claudeModel by the last tool output in the request.
type codexModel struct {
	plain bool // always answer with a short text (the benchmark)
	mu    sync.Mutex
	log   []string
	raw   []string
}

func (f *codexModel) steps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *codexModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model string           `json:"model"`
		Input []map[string]any `json:"input"`
		Tools []map[string]any `json:"tools"`
	}
	if !strings.HasSuffix(r.URL.Path, "/responses") || json.Unmarshal(raw, &body) != nil {
		w.WriteHeader(404)
		return
	}
	f.mu.Lock()
	f.raw = append(f.raw, string(raw))
	f.mu.Unlock()
	tools := map[string]string{}
	for _, tl := range body.Tools {
		tools[fmt.Sprint(tl["name"])] = fmt.Sprint(tl["type"])
	}
	impl := strings.Contains(string(raw), "Create notes.txt")
	last := ""
	if n := len(body.Input); n > 0 {
		if it := body.Input[n-1]; strings.HasSuffix(fmt.Sprint(it["type"]), "_output") {
			last = fmt.Sprint(it["call_id"])
		}
	}
	step := "other"
	if _, ok := tools["apply_patch"]; !f.plain && (ok || len(tools) > 2) {
		refused := strings.Count(string(raw), "planbridge refused:")
		switch {
		case !impl && last == "" && refused == 1:
			step = "plan-bash"
		case !impl && last == "" && refused >= 2:
			step = "plan-propose"
		case impl && last == "call_impl_write":
			step = "impl-done"
		case impl && last == "":
			step = "impl-write"
		case last == "call_plan_write":
			step = "plan-bash"
		case last == "call_plan_bash":
			step = "plan-propose"
		case last == "":
			step = "plan-write"
		}
		f.mu.Lock()
		f.log = append(f.log, step)
		f.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		w.(http.Flusher).Flush()
	}
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1"}})
	text := func(s string) {
		ev(map[string]any{"type": "response.output_text.delta", "delta": s})
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "message", "role": "assistant", "id": "msg_1",
			"content": []map[string]any{{"type": "output_text", "text": s}}}})
	}
	patch := func(id, content string) {
		p := "*** Begin Patch\n*** Add File: notes.txt\n+" + strings.TrimSuffix(content, "\n") + "\n*** End Patch\n"
		if tools["apply_patch"] == "custom" {
			ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "custom_tool_call", "name": "apply_patch", "input": p, "call_id": id}})
			return
		}
		args, _ := json.Marshal(map[string]string{"input": p})
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "function_call", "name": "apply_patch", "arguments": string(args), "call_id": id}})
	}
	shell := func(id, cmd string) {
		var args []byte
		name := "shell"
		if _, ok := tools["shell_command"]; ok {
			name = "shell_command"
			args, _ = json.Marshal(map[string]any{"command": cmd})
		} else {
			args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
		}
		if _, ok := tools["exec_command"]; ok {
			// Outside its own read-only sandbox, which makes Codex ask.
			name = "exec_command"
			args, _ = json.Marshal(map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Create a file?"})
		}
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "function_call", "name": name, "arguments": string(args), "call_id": id}})
	}
	switch step {
	case "plan-write":
		text("Writing the notes first.\n")
		patch("call_plan_write", "written in Plan")
	case "plan-bash":
		shell("call_plan_bash", "touch pwned.txt")
	case "plan-propose":
		text(acpPlanProposal)
	case "impl-write":
		text("Implementing.\n")
		patch("call_impl_write", "notes from Codex\n")
	case "impl-done":
		text("Done: notes.txt written.\n")
	default:
		text("Notes")
	}
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_1",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}

// TestACPCodexThroughTheBinary: Codex (which applies its own patches and
// has its own sandbox) as the engine against a fake Responses API: the
// same Plan and implementation checks as for Claude Code.
func TestACPCodexThroughTheBinary(t *testing.T) {
	t.Parallel() // each waits on its own agent; together they stay within make test's budget
	codex := acpBin(t, "codex-acp")
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	fake := &codexModel{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	home := codexHome(t, srv.URL)
	defer func() {
		if t.Failed() {
			for _, r := range fake.raw {
				var b struct{ Tools []map[string]any }
				json.Unmarshal([]byte(r), &b)
				for _, tl := range b.Tools {
					t.Logf("tool %v %v %.300v", tl["type"], tl["name"], tl["parameters"])
				}
				break
			}
		}
	}()
	acpPlanThenImplement(t, ws, []string{codex}, map[string]string{
		"HOME": home, "CODEX_HOME": home, "OPENAI_API_KEY": "sk-fake-codex",
	}, "notes from Codex\n", fake.steps)
}

// codexHome is a Codex home (outside /tmp) whose config points the model
// provider at base, speaking the Responses API.
func codexHome(t testing.TB, base string) string {
	home := acpHome(t)
	cfg := fmt.Sprintf(`model = "gpt-5.3-codex"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
`, base)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// BenchmarkACPFirstToken: the time from a prompt to its first text, for
// Codex spoken to directly over ACP ("agent") and for the same agent as
// planbridge's acp engine through the binary ("acp": session/submit to
// the first text event), both against the same local fake model.
// benchreport prints acp/agent.
func BenchmarkACPFirstToken(b *testing.B) {
	codex := acpBin(b, "codex-acp")
	srv := httptest.NewServer(&codexModel{plain: true})
	defer srv.Close()
	home := codexHome(b, srv.URL)
	env := map[string]string{"HOME": home, "CODEX_HOME": home, "OPENAI_API_KEY": "sk-fake-codex"}
	ws := gitRepo(b, map[string]string{"README": "readme\n"})
	ctx := context.Background()

	// The agent alone.
	first := make(chan struct{}, 1)
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	proc, err := acp.Start(acp.Command{Argv: []string{codex}, Env: append(os.Environ(), envList...)},
		func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			if method == "session/update" && strings.Contains(string(params), "agent_message_chunk") {
				select {
				case first <- struct{}{}:
				default:
				}
			}
			return nil, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	defer proc.Close(2 * time.Second)
	if _, err := proc.Initialize(ctx, acp.ClientCapabilities{}, acp.Implementation{Name: "bench", Version: "1"}); err != nil {
		b.Fatal(err)
	}
	var ns acp.NewSessionResult
	if err := proc.Call(ctx, "session/new", acp.NewSessionParams{Cwd: ws, MCPServers: []any{}}, &ns); err != nil {
		b.Fatal(err)
	}
	direct := func() time.Duration {
		done := make(chan error, 1)
		t0 := time.Now()
		go func() {
			done <- proc.Call(ctx, "session/prompt", acp.PromptParams{SessionID: ns.SessionID, Prompt: []acp.ContentBlock{{Type: "text", Text: "hello"}}}, nil)
		}()
		<-first
		d := time.Since(t0)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return d
	}

	// Through planbridge.
	state := b.TempDir()
	cmd := exec.Command(binary, "serve", "--state-dir", state)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	c := rpc.NewClient(ctx, out, in)
	if err := c.Call(ctx, "initialize", map[string]any{"engine": map[string]any{"kind": "acp", "command": []string{codex}, "env": env}}, nil); err != nil {
		b.Fatal(err)
	}
	var s struct{ ID string }
	if err := c.Call(ctx, "session/create", map[string]string{"workspace": ws}, &s); err != nil {
		b.Fatal(err)
	}
	turns := 0
	through := func() time.Duration {
		turns++
		n := len(c.Events())
		t0 := time.Now()
		if err := c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "hello"}, nil); err != nil {
			b.Fatal(err)
		}
		var d time.Duration
	wait:
		for {
			for _, e := range c.Events()[n:] {
				if e.Kind == "text" {
					d = time.Since(t0)
					break wait
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		for {
			ends := 0
			for _, e := range c.Events() {
				if e.Kind == "turn_end" {
					ends++
				}
			}
			if ends >= turns {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return d
	}
	direct()
	through() // warm up: both agents started, sessions open
	var dAgent, dACP time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dAgent += direct()
		dACP += through()
	}
	b.StopTimer()
	b.ReportMetric(float64(dAgent.Nanoseconds())/float64(b.N), "agent-ns/op")
	b.ReportMetric(float64(dACP.Nanoseconds())/float64(b.N), "acp-ns/op")
}

// TestACPCodexWorktreeHandoff: accepted into a Worktree, the
// implementation runs in the fork: the agent's session there has the
// fork's directory as its cwd, so Codex's patch (a relative path) lands in
// the fork and the source checkout is untouched.
func TestACPCodexWorktreeHandoff(t *testing.T) {
	t.Parallel() // see TestACPCodexThroughTheBinary
	codex := acpBin(t, "codex-acp")
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	srv := httptest.NewServer(&codexModel{})
	defer srv.Close()
	home := codexHome(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := startServe(t, t.TempDir())
	if err := p.c.Call(ctx, "initialize", map[string]any{"engine": map[string]any{"kind": "acp", "command": []string{codex},
		"env": map[string]string{"HOME": home, "CODEX_HOME": home, "OPENAI_API_KEY": "sk-fake-codex"}}}, nil); err != nil {
		t.Fatal(err)
	}
	p.c.OnAsk(func(json.RawMessage) any { return map[string]bool{"allow": true} })
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan add notes"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	v := getApproval(t, ctx, p.c, s.ID)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("location", "worktree"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/notes"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) && e.Session != s.ID
	}); err != nil {
		t.Fatal(err)
	}
	forks, _ := filepath.Glob(filepath.Join(ws, ".worktrees", "notes", "notes.txt"))
	if len(forks) != 1 {
		t.Fatalf("notes.txt in forks: %v", forks)
	}
	if b, _ := os.ReadFile(forks[0]); string(b) != "notes from Codex\n" {
		t.Errorf("fork notes.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err == nil {
		t.Error("the implementation wrote the source checkout, not the fork")
	}
}
