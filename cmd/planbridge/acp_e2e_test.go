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

	"planbridge/rpc"
)

// acpAgents is where `npm ci --prefix testdata/acp` installs the pinned
// real agents (see testdata/acp/package.json).
func acpBin(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "acp", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the ACP agent %s is not installed (run: npm ci --prefix testdata/acp): %v", name, err)
	}
	return p
}

// claudeModel is a fake Anthropic Messages server for Claude Code: the
// agent's main requests (those offering its Write tool) are scripted by
// step, any other request (titles, summaries) gets a short text.
type claudeModel struct {
	ws string
	// unasked makes the Plan turn's first step a Bash command that the
	// workspace's own settings allow, so the agent runs it without asking
	// (see TestACPClaudeCodeUnaskedWritesAreConfined).
	unasked string
	mu      sync.Mutex
	results map[string]string // tool_use_id → the tool_result's text
	log     []string          // one line per main request: the step answered
	bad     []string          // requests the fake could not parse
	seen    int
}

// result is the text of the tool result the agent sent the model for id.
func (f *claudeModel) result(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.results[id]
}

func (f *claudeModel) steps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *claudeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		w.WriteHeader(404)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not here"}}`)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Tools    []struct{ Name string }
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		f.mu.Lock()
		f.bad = append(f.bad, err.Error())
		f.mu.Unlock()
		w.WriteHeader(400)
		return
	}
	main := false
	for _, tl := range body.Tools {
		if tl.Name == "Write" {
			main = true
		}
	}
	// The last user message: its text and the tool_result it carries.
	lastText, lastResult := "", ""
	if n := len(body.Messages); n > 0 {
		var blocks []map[string]any
		if json.Unmarshal(body.Messages[n-1].Content, &blocks) != nil {
			var s string
			_ = json.Unmarshal(body.Messages[n-1].Content, &s)
			lastText = s
		}
		for _, b := range blocks {
			switch b["type"] {
			case "text":
				lastText += fmt.Sprint(b["text"])
			case "tool_result":
				lastResult = fmt.Sprint(b["tool_use_id"])
				f.mu.Lock()
				if f.results == nil {
					f.results = map[string]string{}
				}
				f.results[lastResult] = fmt.Sprint(b["content"])
				f.mu.Unlock()
			}
		}
	}
	step := "other"
	if main {
		switch {
		case lastResult == "toolu_plan_write":
			step = "plan-bash"
		case lastResult == "toolu_int_sleep":
			step = "int-after-sleep"
		case strings.Contains(lastText, "after the interrupt"):
			step = "int-again"
		case strings.Contains(lastText, "run the long command"):
			step = "int-sleep"
		case lastResult == "toolu_plan_bash", lastResult == "toolu_plan_unasked":
			step = "plan-propose"
		case lastResult == "toolu_impl_write":
			step = "impl-done"
		case lastResult != "":
			step = "other"
		case strings.Contains(lastText, "Create notes.txt"):
			step = "impl-write"
		case f.unasked != "":
			step = "plan-unasked"
		default:
			step = "plan-write"
		}
		f.mu.Lock()
		f.log = append(f.log, step)
		f.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		w.(http.Flusher).Flush()
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	idx := 0
	text := func(s string) {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, idx))
		for len(s) > 0 {
			n := min(len(s), 16)
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, idx, q(s[:n])))
			s = s[n:]
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		idx++
	}
	tool := func(id, name string, input any) {
		in, _ := json.Marshal(input)
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, idx, id, name))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, q(string(in))))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		idx++
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_acp","type":"message","role":"assistant","model":`+q(body.Model)+
		`,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	stop := "tool_use"
	switch step {
	case "plan-write":
		text("Writing the notes first.\n")
		tool("toolu_plan_write", "Write", map[string]string{"file_path": filepath.Join(f.ws, "notes.txt"), "content": "written in Plan\n"})
	case "plan-bash":
		tool("toolu_plan_bash", "Bash", map[string]string{"command": "touch pwned.txt", "description": "Create a file"})
	case "plan-unasked":
		text("Setting things up first.\n")
		tool("toolu_plan_unasked", "Bash", map[string]string{"command": f.unasked, "description": "Set up"})
	case "int-sleep":
		text("Running it.\n")
		tool("toolu_int_sleep", "Bash", map[string]string{"command": "sleep " + acpSleepMarker, "description": "Wait"})
	case "int-after-sleep":
		text("The command ended.\n")
		stop = "end_turn"
	case "int-again":
		text("Still here after the interrupt.\n")
		stop = "end_turn"
	case "plan-propose":
		text(acpPlanProposal)
		stop = "end_turn"
	case "impl-write":
		text("Implementing.\n")
		tool("toolu_impl_write", "Write", map[string]string{"file_path": filepath.Join(f.ws, "notes.txt"), "content": "notes from Claude Code\n"})
	case "impl-done":
		text("Done: notes.txt written.\n")
		stop = "end_turn"
	default:
		text("Notes")
		stop = "end_turn"
	}
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":20}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

const acpPlanProposal = "Checked.\n<proposed_plan>\n# Add notes through the agent\n\n## Key Changes\n- Create notes.txt\n</proposed_plan>\n"

// acpHome is a home directory for an agent's own state, outside /tmp
// (Codex's sandbox helper fails under /tmp) and outside the workspace.
func acpHome(t testing.TB) string {
	t.Helper()
	base, err := filepath.Abs(filepath.Join("..", "..", "testdata", "acp", "home"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(base, "h-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestACPClaudeCodeThroughTheBinary: the real Claude Code ACP agent as the
// engine, against a fake Anthropic server. In Plan the model makes the
// agent write a file and run a mutating command: both are refused by the
// gate and counted, the workspace is unchanged, and the plan reaches the
// card. Accepted in ask mode, the implementation's write happens after
// the person allows it.
func TestACPClaudeCodeThroughTheBinary(t *testing.T) {
	t.Parallel() // each waits on its own agent; together they stay within make test's budget
	claude := acpBin(t, "claude-agent-acp")
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	fake := &claudeModel{ws: ws}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	acpPlanThenImplement(t, ws, []string{claude}, map[string]string{
		"HOME": acpHome(t), "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant-fake", "ANTHROPIC_MODEL": "claude-sonnet-4-5",
	}, "notes from Claude Code\n", fake.steps)
}

// acpPlanThenImplement runs the Plan turn and the accepted implementation
// through the binary with the agent command as the acp engine; the fake
// model behind it follows the plan-write, plan-bash, plan-propose,
// impl-write, impl-done steps.
func acpPlanThenImplement(t *testing.T, ws string, command []string, env map[string]string, want string, steps func() []string) {
	// A hang guard, not a timing assertion: real node agents start slowly
	// on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	before := snapshot(t, ws)
	state := t.TempDir()
	p := startServeEnv(t, []string{"IS_SANDBOX=yes"}, state, "--log", filepath.Join(state, "serve.log"))
	err := p.c.Call(ctx, "initialize", map[string]any{
		"engine": map[string]any{"kind": "acp", "command": command, "env": env},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var asks []string
	var askMu sync.Mutex
	p.c.OnAsk(func(params json.RawMessage) any {
		askMu.Lock()
		asks = append(asks, string(params))
		askMu.Unlock()
		return map[string]bool{"allow": true}
	})
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan add notes"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	dump := func() {
		for _, e := range p.c.Events() {
			t.Logf("event %s %s", e.Kind, e.Data)
		}
		b, _ := os.ReadFile(filepath.Join(state, "serve.log"))
		t.Logf("log:\n%s\nsteps %v", b, steps())
	}
	var st struct {
		Plan         bool  `json:"plan"`
		BlockedTotal int64 `json:"blocked_total"`
	}
	if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Plan || st.BlockedTotal != 2 {
		dump()
		t.Fatalf("after the Plan turn: %+v, want in Plan with 2 blocked (the write and the command)", st)
	}
	if after := snapshot(t, ws); fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("workspace changed in Plan:\nbefore %v\nafter  %v", before, after)
	}
	v := getApproval(t, ctx, p.c, s.ID)
	if !v.Pending || v.Title != "Add notes through the agent" {
		dump()
		t.Fatalf("approval %+v", v)
	}
	askMu.Lock()
	if len(asks) != 0 {
		t.Errorf("the person was asked in Plan: %v", asks)
	}
	askMu.Unlock()

	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "ask"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), "done") }); err != nil {
		dump()
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != want {
		dump()
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	askMu.Lock()
	if len(asks) != 1 || !strings.Contains(asks[0], "notes.txt") {
		t.Errorf("asks during the implementation: %v, want one for the write", asks)
	}
	askMu.Unlock()
	if testing.Verbose() {
		dump()
	}
	if got := strings.Join(steps(), " "); got != "plan-write plan-bash plan-propose impl-write impl-done" {
		t.Errorf("model steps %q", got)
	}
}

// TestDoctorACP: doctor starts the configured agent and checks it speaks
// ACP (an initialize round trip); a missing command and a program that is
// no ACP agent fail with the reason.
func TestDoctorACP(t *testing.T) {
	run := func(command string) (string, error) {
		cmd := exec.Command(binary, "doctor", "--engine", "acp", "--state-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "PLANBRIDGE_ACP_COMMAND="+command)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run(acpBin(t, "codex-acp"))
	if err != nil || !strings.Contains(out, "ok   engine     acp ") || !strings.Contains(out, "speaks ACP 1 (codex-acp 0.16.0)") {
		t.Errorf("doctor with codex-acp: %v\n%s", err, out)
	}
	if !strings.Contains(out, "ok   agent      Plan agent process under the sandbox agent profile: ") ||
		!strings.Contains(out, "landlock ABI ") || !strings.Contains(out, "writes: its own state directory and /dev/null only") ||
		!strings.Contains(out, "seccomp (socket: tcp and udp over inet, inet6 only") || !strings.Contains(out, "no tcp bind") ||
		!strings.Contains(out, "private mount namespace (everything read-only but its own dirs") {
		t.Errorf("doctor does not say what confines the Plan agent:\n%s", out)
	}
	out, err = run("planbridge-no-such-agent --acp")
	if err == nil || !strings.Contains(out, `FAIL engine     acp acp: agent command "planbridge-no-such-agent": exec: "planbridge-no-such-agent": executable file not found`) {
		t.Errorf("doctor with a missing command: %v\n%s", err, out)
	}
	out, err = run("true")
	if err == nil || !strings.Contains(out, "FAIL engine     acp the acp agent true did not initialize") {
		t.Errorf("doctor with a program that is no agent: %v\n%s", err, out)
	}
	out, err = run("")
	if err == nil || !strings.Contains(out, "engine acp needs a command") {
		t.Errorf("doctor without a command: %v\n%s", err, out)
	}
}
