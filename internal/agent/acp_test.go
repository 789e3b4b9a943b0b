package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/internal/redact"
	"planbridge/sandbox"
)

// TestMain doubles as a fake ACP agent when FAKE_ACP_AGENT is set: the
// test binary re-executed is the agent, so the tests need no build step.
func TestMain(m *testing.M) {
	sandbox.Main() // the read-only runner's launcher (terminal tests)
	if os.Getenv("FAKE_ACP_AGENT") == "1" {
		fakeAgent()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeAgent speaks ACP on stdio. Its prompt text selects a script:
//
//	write <abs path>   permission (edit) then fs/write_text_file
//	listwrite <path>   permission (execute, listing the path) then
//	                   fs/write_text_file
//	readmissing <path> fs/read_text_file; reports the error it got
//	exec <command>     permission (execute)
//	hang               waits for session/cancel, answers "cancelled"
//	crash              exits 3 mid-prompt
//	ids                sends a request whose id is the string "1", then
//	                   one whose integer id collides with the client's
//	plan <text>        a plan-exit permission (switch_mode) with text
//	term <json>        terminal/create with the JSON's fields ("kill":
//	                   true kills it at once), then wait_for_exit, output
//	                   and release; reports each answer
//	caps               reports the client capabilities of initialize
//
// It ignores stdin closing and starts a child that sleeps, as Claude Code
// and Codex leave processes behind.
func fakeAgent() {
	if os.Getenv("FAKE_ACP_CHILD") == "1" {
		child := exec.Command("sleep", "1000")
		child.Start()
		os.WriteFile(os.Getenv("FAKE_ACP_PIDFILE"), []byte(fmt.Sprint(child.Process.Pid)), 0o644)
	}
	out := json.NewEncoder(os.Stdout)
	var wmu sync.Mutex
	send := func(v any) {
		wmu.Lock()
		out.Encode(v)
		wmu.Unlock()
	}
	var mu sync.Mutex
	waiting := map[string]chan json.RawMessage{}
	cancelled := make(chan struct{}, 1)
	next := 100
	cwds := map[string]string{}
	clientCaps := ""
	call := func(id any, method string, params any) json.RawMessage {
		key := fmt.Sprint(id)
		ch := make(chan json.RawMessage, 1)
		mu.Lock()
		waiting[key] = ch
		mu.Unlock()
		send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		return <-ch
	}
	text := func(sid, s string) {
		send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid,
			"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": s}}}})
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Method == "" {
			var key any
			json.Unmarshal(m.ID, &key)
			mu.Lock()
			ch := waiting[fmt.Sprint(key)]
			mu.Unlock()
			if ch != nil {
				if len(m.Error) > 0 {
					ch <- append(json.RawMessage(`{"error":`), append(m.Error, '}')...)
				} else {
					ch <- m.Result
				}
			}
			continue
		}
		reply := func(res any) { send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res}) }
		switch m.Method {
		case "initialize":
			var ip struct {
				ClientCapabilities json.RawMessage `json:"clientCapabilities"`
			}
			json.Unmarshal(m.Params, &ip)
			mu.Lock()
			clientCaps = string(ip.ClientCapabilities)
			mu.Unlock()
			reply(map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "fake", "version": "0"}, "agentCapabilities": map[string]any{}})
		case "session/new":
			var p struct{ Cwd string }
			json.Unmarshal(m.Params, &p)
			mu.Lock()
			next++
			sid := fmt.Sprintf("s-%d", next)
			cwds[sid] = p.Cwd
			mu.Unlock()
			reply(map[string]any{"sessionId": sid, "modes": map[string]any{"currentModeId": "acceptEdits",
				"availableModes": []map[string]string{{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}, {"id": "acceptEdits", "name": "Edits"}}}})
		case "session/set_mode":
			var p struct{ SessionID, ModeID string }
			json.Unmarshal(m.Params, &p)
			text(p.SessionID, "[mode "+p.ModeID+"]")
			reply(map[string]any{})
		case "session/cancel":
			cancelled <- struct{}{}
		case "session/prompt":
			var p struct {
				SessionID string
				Prompt    []struct{ Text string }
			}
			json.Unmarshal(m.Params, &p)
			id := m.ID
			go func() {
				prompt := p.Prompt[0].Text
				verb, arg, _ := strings.Cut(prompt, " ")
				stop := "end_turn"
				switch verb {
				case "write":
					mu.Lock()
					next++
					n := next
					mu.Unlock()
					r := call(n, "session/request_permission", map[string]any{"sessionId": p.SessionID,
						"toolCall": map[string]any{"toolCallId": "tc-w", "title": "Write", "kind": "edit", "locations": []map[string]any{{"path": arg}}},
						"options":  []map[string]string{{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}}})
					text(p.SessionID, "permission:"+string(r)+"\n")
					mu.Lock()
					next++
					n = next
					mu.Unlock()
					r = call(n, "fs/write_text_file", map[string]any{"sessionId": p.SessionID, "path": arg, "content": "fake agent\n"})
					text(p.SessionID, "write:"+string(r)+"\n")
				case "listwrite":
					// A shell permission that merely lists the file, then
					// the write itself.
					r := call("s-1", "session/request_permission", map[string]any{"sessionId": p.SessionID,
						"toolCall": map[string]any{"toolCallId": "tc-s", "title": "Run", "kind": "execute", "locations": []map[string]any{{"path": arg}},
							"rawInput": map[string]any{"command": []string{"true"}}},
						"options": []map[string]string{{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}}})
					text(p.SessionID, "permission:"+string(r)+"\n")
					r = call("s-2", "fs/write_text_file", map[string]any{"sessionId": p.SessionID, "path": arg, "content": "fake agent\n"})
					text(p.SessionID, "write:"+string(r)+"\n")
				case "readmissing":
					r := call("read-1", "fs/read_text_file", map[string]any{"sessionId": p.SessionID, "path": arg})
					text(p.SessionID, "read:"+string(r)+"\n")
				case "exec":
					r := call("x-1", "session/request_permission", map[string]any{"sessionId": p.SessionID,
						"toolCall": map[string]any{"toolCallId": "tc-x", "title": "Run", "kind": "execute", "rawInput": map[string]any{"command": []string{"bash", "-lc", arg}}},
						"options":  []map[string]string{{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}}})
					text(p.SessionID, "permission:"+string(r)+"\n")
				case "plan":
					r := call("p-1", "session/request_permission", map[string]any{"sessionId": p.SessionID,
						"toolCall": map[string]any{"toolCallId": "tc-p", "title": "Ready?", "kind": "switch_mode", "rawInput": map[string]any{"plan": arg}},
						"options":  []map[string]string{{"optionId": "default", "name": "Yes", "kind": "allow_once"}, {"optionId": "plan", "name": "No", "kind": "reject_once"}}})
					text(p.SessionID, "permission:"+string(r)+"\n")
				case "sneak":
					// Write without asking, as Claude Code and Codex do.
					werr := os.WriteFile(arg, []byte("sneaked\n"), 0o644)
					serr := os.WriteFile(filepath.Join(os.Getenv("FAKE_ACP_STATE"), "agent-state"), []byte("ok\n"), 0o644)
					text(p.SessionID, fmt.Sprintf("sneak:%v state:%v", werr, serr))
				case "caps":
					mu.Lock()
					text(p.SessionID, "caps:"+clientCaps)
					mu.Unlock()
				case "term":
					var tp map[string]any
					json.Unmarshal([]byte(arg), &tp)
					kill := tp["kill"] == true
					delete(tp, "kill")
					tp["sessionId"] = p.SessionID
					r := call("t-create", "terminal/create", tp)
					var cr struct{ TerminalID string }
					if json.Unmarshal(r, &cr) != nil || cr.TerminalID == "" {
						text(p.SessionID, "term-create:"+string(r))
						break
					}
					ref := map[string]any{"sessionId": p.SessionID, "terminalId": cr.TerminalID}
					if kill {
						call("t-kill", "terminal/kill", ref)
					}
					w := call("t-wait", "terminal/wait_for_exit", ref)
					o := call("t-out", "terminal/output", ref)
					rel := call("t-rel", "terminal/release", ref)
					after := call("t-after", "terminal/output", ref)
					text(p.SessionID, "term-exit:"+string(w)+"\nterm-output:"+string(o)+"\nterm-release:"+string(rel)+"\nterm-after:"+string(after)+"\n")
				case "env":
					text(p.SessionID, fmt.Sprintf("IS_SANDBOX=%q DISABLE_TELEMETRY=%q CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=%q DISABLE_AUTOUPDATER=%q",
						os.Getenv("IS_SANDBOX"), os.Getenv("DISABLE_TELEMETRY"), os.Getenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), os.Getenv("DISABLE_AUTOUPDATER")))
				case "cwd":
					mu.Lock()
					cwd := cwds[p.SessionID]
					mu.Unlock()
					time.Sleep(20 * time.Millisecond) // overlap concurrent turns
					text(p.SessionID, "cwd:"+cwd)
				case "hang":
					text(p.SessionID, "working")
					<-cancelled
					stop = "cancelled"
				case "crash":
					text(p.SessionID, "about to crash")
					time.Sleep(50 * time.Millisecond)
					os.Exit(3)
				case "ids":
					// The string id "1" and the integer id 1 both look like
					// the client's first call; they are requests all the same.
					r1 := call("1", "fs/read_text_file", map[string]any{"sessionId": p.SessionID, "path": arg})
					r2 := call(1, "fs/read_text_file", map[string]any{"sessionId": p.SessionID, "path": arg})
					text(p.SessionID, "ids:"+string(r1)+"|"+string(r2)+"\n")
				default:
					text(p.SessionID, "echo:"+prompt)
				}
				send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"stopReason": stop}})
			}()
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "nope"}})
		}
	}
	// stdin closed: keep running, as the real agents do.
	select {}
}

type acpSink struct {
	mu      sync.Mutex
	text    strings.Builder
	done    []string
	blocked []string
	results []string
}

func (s *acpSink) Text(d string) { s.mu.Lock(); s.text.WriteString(d); s.mu.Unlock() }
func (s *acpSink) ResponseDone(t string) {
	s.mu.Lock()
	s.done = append(s.done, t)
	s.mu.Unlock()
}
func (s *acpSink) ToolCall(ToolCall) {}
func (s *acpSink) ToolResult(c ToolCall, ok bool, out string) {
	s.mu.Lock()
	s.results = append(s.results, fmt.Sprintf("%s %v", c.Name, ok))
	s.mu.Unlock()
}
func (s *acpSink) Blocked(c ToolCall, code, reason string) {
	s.mu.Lock()
	s.blocked = append(s.blocked, c.Name+" "+code)
	s.mu.Unlock()
}
func (s *acpSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

type allowAll struct{}

func (allowAll) Classify(src string) (bool, string) {
	if strings.HasPrefix(src, "ls") {
		return true, ""
	}
	return false, "not read-only"
}
func (allowAll) RunReadOnly(context.Context, Roots, string) (string, int, bool, string, error) {
	return "", 0, false, "", nil
}
func (allowAll) Run(context.Context, string, string) (string, int, error) { return "", 0, nil }

func newFakeACP(t *testing.T, env ...string) *ACP {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"FAKE_ACP_AGENT": "1"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	eng, err := NewACP(ACPConfig{Command: []string{self}, Env: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng
}

func acpTurnOf(eng *ACP, ws, work, prompt string, plan bool, mode Mode, ask Asker) (*Turn, *acpSink) {
	sink := &acpSink{}
	return &Turn{Engine: eng, Messages: []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: prompt}},
		Tools: NewRegistry(DefaultTools()...), Gate: Gate{Plan: plan, Mode: mode, Shell: allowAll{}, Roots: Roots{Workspace: ws, Work: work}},
		Env: Env{Roots: Roots{Workspace: ws, Work: work}}, Ask: ask, Sink: sink}, sink
}

// TestACPPermissionsAndWrites: a write through the agent's permission
// request and fs/write_text_file is refused in Plan (counted twice, nothing
// written), asked outside Plan and done only when the person allows, and
// denied when they do not.
func TestACPPermissionsAndWrites(t *testing.T) {
	ctx := context.Background()
	eng := newFakeACP(t)
	ws, work := t.TempDir(), t.TempDir()
	target := filepath.Join(ws, "notes.txt")

	tn, sink := acpTurnOf(eng, ws, work, "write "+target, true, ModeFullAuto, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Plan wrote the file: %v", err)
	}
	if got := strings.Join(sink.blocked, ","); got != "edit plan_mode_blocked,write_file plan_mode_blocked" {
		t.Errorf("blocked in Plan: %q", got)
	}
	if out := sink.String(); !strings.Contains(out, `[mode default]`) || !strings.Contains(out, `"optionId":"no"`) || !strings.Contains(out, `"error"`) {
		t.Errorf("agent saw: %s", out)
	}

	// Ask mode, the person says no: nothing written.
	var asked []string
	deny := func(ctx context.Context, c ToolCall, reason string) (bool, error) {
		asked = append(asked, c.Name)
		return false, nil
	}
	tn, sink = acpTurnOf(eng, ws, work, "write "+target, false, ModeAsk, deny)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a denied write happened: %v", err)
	}
	if len(asked) != 2 || len(sink.blocked) != 0 {
		t.Errorf("asked %v, blocked %v", asked, sink.blocked)
	}

	// The person allows the permission: the write it covers is not asked again.
	asked = nil
	allow := func(ctx context.Context, c ToolCall, reason string) (bool, error) {
		asked = append(asked, c.Name)
		return true, nil
	}
	tn, sink = acpTurnOf(eng, ws, work, "write "+target, false, ModeAsk, allow)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); string(b) != "fake agent\n" {
		t.Fatalf("notes.txt %q %v", b, err)
	}
	if strings.Join(asked, ",") != "edit" {
		t.Errorf("asked %v, want once for the edit", asked)
	}

	// A write outside the workspace is refused whatever the mode.
	outside := filepath.Join(t.TempDir(), "x")
	tn, sink = acpTurnOf(eng, ws, work, "write "+outside, false, ModeFullAuto, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("wrote outside the workspace")
	}
	if !strings.Contains(sink.String(), "escapes the workspace") {
		t.Errorf("agent saw: %s", sink.String())
	}
}

// TestACPReadMissingIsEmpty: a missing file reads as empty content, not
// an error (Gemini CLI can create a file only then), and a path escaping
// the workspace through a symlink is refused.
func TestACPReadMissingIsEmpty(t *testing.T) {
	ctx := context.Background()
	eng := newFakeACP(t)
	ws := t.TempDir()
	tn, sink := acpTurnOf(eng, ws, t.TempDir(), "readmissing "+filepath.Join(ws, "new.txt"), true, ModeAsk, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if out := sink.String(); !strings.Contains(out, `read:{"content":""}`) {
		t.Errorf("missing file reported as %s", out)
	}
	tn, sink = acpTurnOf(eng, ws, t.TempDir(), "readmissing /etc/passwd", true, ModeAsk, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if out := sink.String(); !strings.Contains(out, "planbridge refused the read") || strings.Contains(out, "root:") {
		t.Errorf("read outside the workspace: %s", out)
	}
	os.Symlink("/proc/self", filepath.Join(ws, "proc"))
	tn, sink = acpTurnOf(eng, ws, t.TempDir(), "readmissing "+filepath.Join(ws, "proc", "environ"), true, ModeAsk, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if out := sink.String(); !strings.Contains(out, "planbridge refused the read") || strings.Contains(out, "FAKE_ACP_AGENT") {
		t.Errorf("read through a symlink to /proc: %s", out)
	}
}

// TestACPRequestIDsNeverMatchResponses: an agent's requests whose ids
// equal the client's own (as a string and as an integer) are served as
// requests, not taken for responses.
func TestACPRequestIDsNeverMatchResponses(t *testing.T) {
	eng := newFakeACP(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello"), 0o644)
	tn, sink := acpTurnOf(eng, ws, t.TempDir(), "ids "+filepath.Join(ws, "a.txt"), true, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := sink.String(); !strings.Contains(out, `ids:{"content":"hello"}|{"content":"hello"}`) {
		t.Errorf("agent saw %s", out)
	}
}

// TestACPExecAndPlanExit: a mutating command is refused in Plan, a
// read-only one allowed; the agent's plan-exit request becomes a
// <proposed_plan> block and is refused (the card decides).
func TestACPExecAndPlanExit(t *testing.T) {
	ctx := context.Background()
	eng := newFakeACP(t)
	ws := t.TempDir()
	tn, sink := acpTurnOf(eng, ws, t.TempDir(), "exec touch x", true, ModeFullAuto, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.blocked) != 1 || !strings.Contains(sink.String(), `"optionId":"no"`) {
		t.Errorf("touch in Plan: blocked %v, agent saw %s", sink.blocked, sink.String())
	}
	tn, sink = acpTurnOf(eng, ws, t.TempDir(), "exec ls -la", true, ModeAsk, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.blocked) != 0 || !strings.Contains(sink.String(), `"optionId":"yes"`) {
		t.Errorf("ls in Plan: blocked %v, agent saw %s", sink.blocked, sink.String())
	}
	tn, sink = acpTurnOf(eng, ws, t.TempDir(), "plan # Title\n- step", true, ModeAsk, nil)
	if _, err := tn.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.done) != 1 || !strings.Contains(sink.done[0], "<proposed_plan>\n# Title\n- step\n</proposed_plan>") || !strings.Contains(sink.done[0], `"optionId":"plan"`) {
		t.Errorf("plan exit: %q", sink.done)
	}
}

// TestACPCancelAndCrash: an interrupt sends session/cancel and ends the
// turn with the context's error; an agent that dies mid-prompt ends the
// turn with a clear error and the next turn runs on a restarted agent,
// told the conversation so far.
func TestACPCancelAndCrash(t *testing.T) {
	eng := newFakeACP(t)
	ws, work := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	tn, sink := acpTurnOf(eng, ws, work, "hang", true, ModeAsk, nil)
	errc := make(chan error, 1)
	go func() { _, err := tn.Run(ctx); errc <- err }()
	for !strings.Contains(sink.String(), "working") {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled turn: %v", err)
	}

	tn, _ = acpTurnOf(eng, ws, work, "crash", true, ModeAsk, nil)
	_, err := tn.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "restarted at the next prompt") {
		t.Fatalf("crash: %v", err)
	}
	tn, sink = acpTurnOf(eng, ws, work, "again", true, ModeAsk, nil)
	tn.Messages = []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "first question"}, {Role: RoleAssistant, Content: "first answer"}, {Role: RoleUser, Content: "again"}}
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := sink.String(); !strings.Contains(out, "echo:The conversation so far") || !strings.Contains(out, "first answer") {
		t.Errorf("after the restart the agent saw %q", out)
	}
}

// TestACPCloseKillsTheGroup: the agent ignores stdin closing and leaves a
// child; Close kills both.
func TestACPCloseKillsTheGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	eng := newFakeACP(t, "FAKE_ACP_CHILD=1", "FAKE_ACP_PIDFILE="+pidfile)
	tn, _ := acpTurnOf(eng, t.TempDir(), t.TempDir(), "hello", false, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	eng.Close()
	// The child is reaped by init once killed; until then it is a zombie.
	for i := 0; ; i++ {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if i > 500 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the agent's child survived Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bwrapConfine is a minimal OS confinement for the hook's test (the
// production one comes from the sandbox package): in Plan the whole file
// system is read-only but the writable directories.
func bwrapConfine(t *testing.T, calls *[]Confinement) func(*exec.Cmd, Confinement) error {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	return func(cmd *exec.Cmd, c Confinement) error {
		*calls = append(*calls, c)
		if !c.Plan {
			return nil
		}
		args := []string{bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"}
		for _, w := range c.Writable {
			args = append(args, "--bind", w, w)
		}
		cmd.Args = append(append(args, "--"), cmd.Args...)
		cmd.Args[len(args)+1] = cmd.Path
		cmd.Path = bwrap
		return nil
	}
}

// TestACPConfinedPlanAgentCannotWrite: an agent that writes the workspace
// without asking (no permission request, no fs method) cannot in Plan:
// its process is confined with only its state directory writable. Outside
// Plan the same write happens. Run as root and as nobody.
func TestACPConfinedPlanAgentCannotWrite(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "acp")
	var calls []Confinement
	eng, err := NewACP(ACPConfig{Command: []string{self}, Env: map[string]string{"FAKE_ACP_AGENT": "1", "FAKE_ACP_STATE": state},
		StateDir: state, Confine: bwrapConfine(t, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ws := t.TempDir()
	target := filepath.Join(ws, "sneaked.txt")
	tn, sink := acpTurnOf(eng, ws, t.TempDir(), "sneak "+target, true, ModeFullAuto, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the confined Plan agent wrote the workspace: %v", err)
	}
	if out := sink.String(); !strings.Contains(out, "read-only file system") || !strings.Contains(out, "state:<nil>") {
		t.Errorf("agent saw %q", out)
	}
	tn, sink = acpTurnOf(eng, ws, t.TempDir(), "sneak "+target, false, ModeFullAuto, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); string(b) != "sneaked\n" {
		t.Errorf("outside Plan: %q %v (agent saw %q)", b, err, sink.String())
	}
	if len(calls) != 2 || !calls[0].Plan || calls[1].Plan || len(calls[0].Writable) != 1 || calls[0].Writable[0] != state {
		t.Errorf("confinement calls %+v", calls)
	}
	if os.Geteuid() == 0 {
		t.Run("nobody", func(t *testing.T) {
			dir, err := os.MkdirTemp("", "acp-nobody-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			os.Chown(dir, 65534, 65534)
			// A copy nobody can execute (the build directory is root's).
			bin, err := os.ReadFile(self)
			if err != nil {
				t.Fatal(err)
			}
			exe := filepath.Join(dir, "agent.test")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run", "^TestACPConfinedPlanAgentCannotWrite$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") || strings.Contains(string(out), "no tests to run") {
				t.Fatalf("as nobody: %v\n%s", err, out)
			}
		})
	}
}

// TestACPSessionsPerWorkspaceConcurrently: two planbridge sessions (one in
// a Worktree fork's directory) prompt one agent at once; each gets its own
// ACP session with its own cwd, and neither sees the other's text.
func TestACPSessionsPerWorkspaceConcurrently(t *testing.T) {
	eng := newFakeACP(t)
	ws, fork := t.TempDir(), t.TempDir()
	var wg sync.WaitGroup
	sinks := make([]*acpSink, 2)
	for i, dir := range []string{ws, fork} {
		tn, sink := acpTurnOf(eng, dir, t.TempDir(), "cwd", false, ModeAsk, nil)
		sinks[i] = sink
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tn.Run(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, dir := range []string{ws, fork} {
		if got := sinks[i].String(); !strings.HasSuffix(got, "cwd:"+dir) || strings.Count(got, "cwd:") != 1 {
			t.Errorf("session %d saw %q, want its own cwd %s", i, got, dir)
		}
	}
}

// TestACPEnvironmentHygiene: the agent never sees IS_SANDBOX (Claude Code
// as root) even when planbridge's environment or the configuration has
// it, and always gets the no-telemetry, no-update variables.
func TestACPEnvironmentHygiene(t *testing.T) {
	t.Setenv("IS_SANDBOX", "yes")
	eng := newFakeACP(t, "IS_SANDBOX=1")
	tn, sink := acpTurnOf(eng, t.TempDir(), t.TempDir(), "env", false, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink.String(); !strings.Contains(got, `IS_SANDBOX="" DISABLE_TELEMETRY="1" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1" DISABLE_AUTOUPDATER="1"`) {
		t.Errorf("agent environment: %s", got)
	}
}

// TestACPProtectedPathAsksInFullAuto: an agent's edit of a repository
// control file asks the person with the warning even in full-auto, and a
// denial leaves it unwritten (neither through the permission nor through
// fs/write_text_file).
func TestACPProtectedPathAsksInFullAuto(t *testing.T) {
	eng := newFakeACP(t)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	var reasons []string
	deny := func(ctx context.Context, c ToolCall, reason string) (bool, error) {
		reasons = append(reasons, reason)
		return false, nil
	}
	tn, _ := acpTurnOf(eng, ws, t.TempDir(), "write "+hook, false, ModeFullAuto, deny)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hook); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hook was written: %v", err)
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], "WARNING") || !strings.Contains(reasons[1], "WARNING") {
		t.Errorf("asked %q", reasons)
	}
}

// TestACPRedacted: under Redacting, a key the agent echoes never reaches
// the sink or the turn's messages.
func TestACPRedacted(t *testing.T) {
	const key = "sk-ant-acp-secret-0123456789"
	set := &redact.Set{}
	set.Add(key)
	eng := Redacting(newFakeACP(t), set)
	tn, sink := acpTurnOf(nil, t.TempDir(), t.TempDir(), "say "+key, false, ModeAsk, nil)
	tn.Engine = eng
	res, err := tn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.String(); strings.Contains(got, key) || !strings.Contains(got, "[redacted]") {
		t.Errorf("sink saw %q", got)
	}
	if len(res.Messages) != 1 || strings.Contains(res.Messages[0].Content, key) || strings.Contains(strings.Join(sink.done, ""), key) {
		t.Errorf("messages %+v done %q", res.Messages, sink.done)
	}
}

// TestACPPlanRefusedWhenUnconfinable: when the Plan agent cannot be
// confined (no Landlock here), a Plan turn fails with the reason and no
// agent starts for it; a non-Plan turn still runs.
func TestACPPlanRefusedWhenUnconfinable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(t.TempDir(), "pid")
	eng, err := NewACP(ACPConfig{Command: []string{self}, Env: map[string]string{"FAKE_ACP_AGENT": "1", "FAKE_ACP_CHILD": "1", "FAKE_ACP_PIDFILE": pidfile},
		StateDir: filepath.Join(t.TempDir(), "acp"),
		Confine: func(cmd *exec.Cmd, c Confinement) error {
			if c.Plan {
				return errors.New("sandbox: no Landlock on this kernel")
			}
			return nil
		}, Confined: "NO OS CONFINEMENT of the Plan agent process"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ws := t.TempDir()
	tn, _ := acpTurnOf(eng, ws, t.TempDir(), "hello", true, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no Landlock on this kernel") {
		t.Fatalf("Plan turn without confinement: %v", err)
	}
	if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an agent started for the refused Plan turn: %v", err)
	}
	if got := eng.AgentConfinement(); got != "NO OS CONFINEMENT of the Plan agent process" {
		t.Errorf("AgentConfinement %q", got)
	}
	tn, sink := acpTurnOf(eng, ws, t.TempDir(), "hello", false, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil || !strings.Contains(sink.String(), "echo:hello") {
		t.Fatalf("non-Plan turn: %v %q", err, sink.String())
	}
	if _, err := os.Stat(pidfile); err != nil {
		t.Fatalf("the non-Plan agent did not start: %v", err)
	}
}

// termTurn is a turn on eng whose shell is the real one (the read-only
// runner under the OS sandbox in Plan).
func termTurn(eng *ACP, ws, prompt string, plan bool, mode Mode, ask Asker) (*Turn, *acpSink) {
	tn, sink := acpTurnOf(eng, ws, filepath.Join(ws, ".work"), prompt, plan, mode, ask)
	tn.Gate.Shell = BashShell{}
	tn.Env.Shell = BashShell{}
	return tn, sink
}

// TestACPTerminals: planbridge advertises terminal/* and serves them
// through the gate. In Plan a read-only command runs (under the read-only
// runner) and reports its output and exit; a mutating one, a script that
// writes, and a cwd outside the workspace are refused and counted,
// nothing written. Outside Plan in ask mode a mutating command asks: run
// when allowed, refused when not. kill ends a command with SIGKILL;
// release forgets the terminal.
func TestACPTerminals(t *testing.T) {
	eng := newFakeACP(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README"), []byte("hello terminal\n"), 0o644)
	run := func(args string, plan bool, mode Mode, ask Asker) (string, *acpSink) {
		t.Helper()
		tn, sink := termTurn(eng, ws, "term "+args, plan, mode, ask)
		if _, err := tn.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return sink.String(), sink
	}
	out, _ := run(`{}`, true, ModeAsk, nil)
	tn, sink := termTurn(eng, ws, "caps", true, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil || !strings.Contains(sink.String(), `"terminal":true`) {
		t.Fatalf("capabilities: %v %q", err, sink.String())
	}
	if !strings.Contains(out, "term-create:") || !strings.Contains(out, "without a command") {
		t.Errorf("no command: %q", out)
	}

	out, sink = run(`{"command":"cat","args":["README"],"outputByteLimit":9}`, true, ModeAsk, nil)
	if !strings.Contains(out, `term-exit:{"exitCode":0,"signal":null}`) || !strings.Contains(out, `term-output:{"output":"terminal\n","truncated":true,"exitStatus":{"exitCode":0,"signal":null}}`) ||
		!strings.Contains(out, "term-release:{}") || !strings.Contains(out, "term-after:{\"error\"") || len(sink.blocked) != 0 {
		t.Errorf("read-only command in Plan: %q blocked %v", out, sink.blocked)
	}
	for _, args := range []string{
		`{"command":"touch","args":["x"]}`,
		`{"command":"bash","args":["-c","echo hi > x"]}`,
		`{"command":"touch x"}`,
		`{"command":"cat","args":["README"],"env":[{"name":"LD_PRELOAD","value":"/tmp/x.so"}]}`,
		`{"command":"ls","cwd":"/etc"}`,
	} {
		out, sink = run(args, true, ModeFullAuto, nil)
		if !strings.Contains(out, "term-create:") || !strings.Contains(out, "planbridge refused") {
			t.Errorf("Plan %s: %q", args, out)
		}
		if !strings.Contains(args, "cwd") && (len(sink.blocked) != 1 || sink.blocked[0] != "bash "+CodePlanBlocked) {
			t.Errorf("Plan %s: blocked %v", args, sink.blocked)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Fatal("a Plan terminal wrote the workspace")
	}

	var asked []string
	deny := func(_ context.Context, c ToolCall, _ string) (bool, error) {
		asked = append(asked, string(c.Arguments))
		return false, nil
	}
	out, _ = run(`{"command":"touch","args":["x"]}`, false, ModeAsk, deny)
	if !strings.Contains(out, "the person did not allow") || len(asked) != 1 || !strings.Contains(asked[0], `touch`) {
		t.Errorf("denied: %q asked %v", out, asked)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Fatal("a denied terminal wrote the workspace")
	}
	allow := func(_ context.Context, c ToolCall, _ string) (bool, error) {
		asked = append(asked, string(c.Arguments))
		return true, nil
	}
	out, _ = run(`{"command":"touch","args":["x"]}`, false, ModeAsk, allow)
	if !strings.Contains(out, `term-exit:{"exitCode":0`) || len(asked) != 2 {
		t.Errorf("allowed: %q asked %v", out, asked)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	out, _ = run(`{"command":"ls"}`, false, ModeAsk, allow)
	if !strings.Contains(out, `README`) || len(asked) != 2 {
		t.Errorf("read-only outside Plan: %q asked %v", out, asked)
	}
	out, _ = run(`{"command":"sleep","args":["100"],"kill":true}`, false, ModeFullAuto, nil)
	if !strings.Contains(out, `term-exit:{"exitCode":null,"signal":"SIGKILL"}`) {
		t.Errorf("killed: %q", out)
	}
}

// childOf reads the pid the fake agent's sleeping child wrote.
func childOf(t *testing.T, pidfile string) int {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// running says pid lives (a zombie does not).
func running(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// TestACPPlanTurnStopsIdleUnconfinedAgent: what the unconfined agent of an
// implementation turn left running (its sleeping child) ends before a Plan
// turn starts; a Plan turn leaves a busy unconfined agent alone.
func TestACPPlanTurnStopsIdleUnconfinedAgent(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	eng := newFakeACP(t, "FAKE_ACP_CHILD=1", "FAKE_ACP_PIDFILE="+pidfile)
	ws, work := t.TempDir(), t.TempDir()
	tn, _ := acpTurnOf(eng, ws, work, "hello", false, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	left := childOf(t, pidfile)
	if !running(left) {
		t.Fatal("the fake agent's child is not running")
	}
	tn, _ = acpTurnOf(eng, ws, work, "hello", true, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; running(left); i++ {
		if i > 500 {
			syscall.Kill(left, syscall.SIGKILL)
			t.Fatal("the implementation agent's child ran on into Plan")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A busy unconfined agent (a turn of another session hangs on it) is
	// not stopped by a Plan turn.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	busy, sink := acpTurnOf(eng, ws, t.TempDir(), "hang", false, ModeAsk, nil)
	errc := make(chan error, 1)
	go func() { _, err := busy.Run(ctx); errc <- err }()
	for !strings.Contains(sink.String(), "working") {
		time.Sleep(10 * time.Millisecond)
	}
	kept := childOf(t, pidfile)
	tn, _ = acpTurnOf(eng, ws, work, "hello", true, ModeAsk, nil)
	if _, err := tn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !running(kept) {
		t.Error("a Plan turn stopped an unconfined agent another turn ran on")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled turn: %v", err)
	}
	// The interrupted agent had no other turn: it is stopped with its child.
	for i := 0; running(kept); i++ {
		if i > 500 {
			syscall.Kill(kept, syscall.SIGKILL)
			t.Fatal("the interrupted agent's child lived on")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
