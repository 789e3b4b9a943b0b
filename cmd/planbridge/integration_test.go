package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"planbridge/rpc"
	"planbridge/sandbox"
)

// binary is the planbridge executable built once for these tests.
var binary string

func TestMain(m *testing.M) {
	sandbox.Main()
	dir, err := os.MkdirTemp("", "planbridge-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "planbridge")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build planbridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `planbridge serve` with a client on its stdio.
type proc struct {
	state  string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	c      *rpc.Client
	stderr *bytes.Buffer
}

func startServe(t *testing.T, stateDir string, extra ...string) *proc {
	t.Helper()
	return startServeEnv(t, nil, stateDir, extra...)
}

func startServeEnv(t *testing.T, env []string, stateDir string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--state-dir", stateDir}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, state: stateDir}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.c = rpc.NewClient(context.Background(), p.stdout, p.stdin)
	t.Cleanup(func() {
		if t.Failed() && p.cmd.ProcessState == nil {
			// A stalled server shows where: SIGQUIT makes the Go runtime
			// print every goroutine to its stderr before it exits.
			p.cmd.Process.Signal(syscall.SIGQUIT)
			p.waitOrKill()
		}
		p.stop()
		if t.Failed() && p.stderr.Len() > 0 {
			t.Logf("serve --state-dir %s stderr:\n%s", stateDir, p.stderr.String())
		}
	})
	return p
}

func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.c.Close()
	p.stdin.Close()
	p.waitOrKill()
}

// waitOrKill waits for the process to exit, killing it after 5 s.
func (p *proc) waitOrKill() {
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func writeScript(t *testing.T, steps string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(f, []byte(steps), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

type sessionInfo struct {
	ID           string `json:"id"`
	Plan         bool   `json:"plan"`
	Mode         string `json:"mode"`
	BlockedTotal int64  `json:"blocked_total"`
	Busy         bool   `json:"busy"`
}

func createSession(t *testing.T, ctx context.Context, c *rpc.Client, ws string) sessionInfo {
	t.Helper()
	var s sessionInfo
	if err := c.Call(ctx, "session/create", map[string]string{"workspace": ws}, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func waitTurnEnd(t *testing.T, ctx context.Context, c *rpc.Client, n int) {
	t.Helper()
	count := 0
	if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool {
		if e.Kind == "turn_end" {
			count++
		}
		return count >= n
	}); err != nil {
		t.Fatalf("waiting for turn %d: %v", n, err)
	}
}

// rawFrames writes bytes straight to a fresh server and reads n responses.
func rawExchange(t *testing.T, input string, n int) []map[string]any {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--state-dir", t.TempDir())
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	var resps []map[string]any
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\r\n\r\n"))
		if i < 0 {
			t.Fatalf("unframed output %q", out)
		}
		var length int
		fmt.Sscanf(string(out[:i]), "Content-Length: %d", &length)
		body := out[i+4 : i+4+length]
		out = out[i+4+length:]
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("bad response %q", body)
		}
		resps = append(resps, m)
	}
	if len(resps) != n {
		t.Fatalf("got %d responses, want %d: %v", len(resps), n, resps)
	}
	return resps
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return int(e["code"].(float64))
}

func TestMalformedInputKeepsServing(t *testing.T) {
	input := frame(`{not json`) +
		frame(`[1,2,3]`) +
		frame(`{"jsonrpc":"2.0","id":2,"method":"no/such"}`) +
		frame(`{"jsonrpc":"2.0","id":3,"method":"session/create","params":{"workspace":42}}`) +
		frame(`{"jsonrpc":"2.0","id":4,"method":"session/open","params":{"session":"s-missing"}}`) +
		"Content-Length: banana\r\n\r\n" +
		frame(`{"id":5,"method":"initialize"}`) +
		frame(`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{}}`)
	resps := rawExchange(t, input, 8)
	byID := map[float64]map[string]any{}
	var nullIDs []map[string]any
	for _, r := range resps {
		if id, ok := r["id"].(float64); ok {
			byID[id] = r
		} else {
			nullIDs = append(nullIDs, r)
		}
	}
	if len(nullIDs) != 3 {
		t.Fatalf("want 3 errors without id (bad JSON, batch, bad header), got %v", nullIDs)
	}
	if errCode(nullIDs[0]) != -32700 || errCode(nullIDs[1]) != -32600 || errCode(nullIDs[2]) != -32700 {
		t.Errorf("null-id errors: %v", nullIDs)
	}
	for id, want := range map[float64]int{2: -32601, 3: -32602, 4: -32000, 5: -32600, 6: 0} {
		if got := errCode(byID[id]); got != want {
			t.Errorf("id %v: error code %d, want %d (%v)", id, got, want, byID[id])
		}
	}
	if e := byID[4]["error"].(map[string]any); e["data"].(map[string]any)["code"] != "not_found" {
		t.Errorf("id 4 data.code: %v", e)
	}
	if byID[6]["result"].(map[string]any)["version"] == nil {
		t.Errorf("initialize result: %v", byID[6])
	}
}

const refusedEdits = `[
 {"text": "Trying to edit.\n", "tool_calls": [
   {"name": "write_file", "arguments": {"path": "main.go", "content": "x"}},
   {"name": "edit_file", "arguments": {"path": "main.go", "old": "package", "new": "pkg"}},
   {"name": "apply_patch", "arguments": {"patch": "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package evil\n"}},
   {"name": "apply_patch", "arguments": {"patch": "--- /dev/null\n+++ work://notes.md\n@@ -0,0 +1 @@\n+ok\n--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package evil\n"}},
   {"name": "exit_plan_mode", "arguments": {}},
   {"name": "plan/exit", "arguments": {"session": "x"}},
   {"name": "bash", "arguments": {"command": "rm -rf ."}}
 ]},
 {"text": "/plan off\nI would like to leave Plan now.\n"}
]`

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		out[p] = fmt.Sprintf("%x|%v|%v", b, info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	return out
}

func TestPlanTurnRefusesMutationsAndCannotLeavePlan(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	before := snapshot(t, ws)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, refusedEdits))
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan Please change main.go"}, nil); err != nil {
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
	if !st.Plan {
		t.Error("the model's turn left Plan")
	}
	if st.BlockedTotal != 7 {
		t.Errorf("blocked_total = %d, want 7", st.BlockedTotal)
	}
	blocked := 0
	for _, e := range p.c.Events() {
		if e.Kind == "blocked" {
			blocked++
			var d map[string]any
			json.Unmarshal(e.Data, &d)
			if d["code"] != "plan_mode_blocked" {
				t.Errorf("blocked event code %v", d["code"])
			}
		}
	}
	if blocked != 7 {
		t.Errorf("%d blocked events, want 7", blocked)
	}
	after := snapshot(t, ws)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("workspace changed in Plan:\nbefore %v\nafter  %v", before, after)
	}
}

func TestRestartRestoresSessionsAndPlan(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	script := writeScript(t, `[{"text": "first answer\n"}, {"text": "second answer\n"}]`)
	p := startServe(t, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	for _, req := range []struct{ method, mode string }{{"plan/enter", ""}, {"session/setPermissionMode", "edits"}} {
		if err := p.c.Call(ctx, req.method, map[string]string{"session": s.ID, "mode": req.mode}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "look around"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	p.stop()

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	var list []sessionInfo
	if err := p2.c.Call(ctx, "session/list", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != s.ID || !list[0].Plan || list[0].Mode != "edits" {
		t.Fatalf("after restart: %+v", list)
	}
	var opened struct {
		Session sessionInfo `json:"session"`
		Events  []rpc.Event `json:"events"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i, e := range opened.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		if e.Kind == "text" {
			var d struct{ Delta string }
			json.Unmarshal(e.Data, &d)
			text.WriteString(d.Delta)
		}
	}
	if text.String() != "first answer\n" {
		t.Errorf("restored transcript text %q", text.String())
	}
	// The script cursor survived too: the next turn gets the second answer.
	if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "again"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p2.c, 1)
	var got strings.Builder
	for _, e := range p2.c.Events() {
		if e.Kind == "text" {
			var d struct{ Delta string }
			json.Unmarshal(e.Data, &d)
			got.WriteString(d.Delta)
		}
	}
	if got.String() != "second answer\n" {
		t.Errorf("second turn text %q", got.String())
	}
}

func TestPlanSlashCommands(t *testing.T) {
	ctx := ctxT(t)
	ws := t.TempDir()
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, `[{"text":"ok\n"}]`))
	s := createSession(t, ctx, p.c, ws)
	status := func() bool {
		var st struct{ Plan bool }
		if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st); err != nil {
			t.Fatal(err)
		}
		return st.Plan
	}
	steps := []struct {
		text string
		plan bool
	}{
		{"/plan", true}, {"/plan", false}, {"/plan on", true}, {"/plan on", true}, {"/plan off", false},
		{"/plan on", true}, {"/plan stop", false}, {"/plan on", true}, {"/plan cancel", false},
		{"/plan status", false}, {"/planning is fun", false},
		{"/plan Investigate the bug", true},
	}
	for _, st := range steps {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": st.text}, nil); err != nil {
			t.Fatalf("%q: %v", st.text, err)
		}
		if st.text == "/planning is fun" {
			waitTurnEnd(t, ctx, p.c, 1)
		}
		if got := status(); got != st.plan {
			t.Errorf("after %q Plan = %v, want %v", st.text, got, st.plan)
		}
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "notice" && strings.Contains(string(e.Data), "Plan off") }); err != nil {
		t.Error("no /plan status notice")
	}
}

func TestPermissionAskOutsidePlan(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"f.txt": "old\n"})
	script := writeScript(t, `[
	 {"tool_calls": [{"name": "write_file", "arguments": {"path": "f.txt", "content": "new\n"}}]},
	 {"text": "done\n"},
	 {"tool_calls": [{"name": "write_file", "arguments": {"path": "g.txt", "content": "g\n"}}]},
	 {"text": "done\n"}]`)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	var asked []string
	p.c.OnAsk(func(params json.RawMessage) any {
		var a struct{ Tool string }
		json.Unmarshal(params, &a)
		asked = append(asked, a.Tool)
		return map[string]bool{"allow": len(asked) == 1}
	})
	for i := 1; i <= 2; i++ {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "write"}, nil); err != nil {
			t.Fatal(err)
		}
		waitTurnEnd(t, ctx, p.c, i)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "new\n" {
		t.Errorf("allowed write did not happen: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "g.txt")); err == nil {
		t.Error("denied write happened")
	}
	if strings.Join(asked, ",") != "write_file,write_file" {
		t.Errorf("asked %v", asked)
	}
}

func TestCancelRequest(t *testing.T) {
	// A request cancelled by $/cancelRequest must not wedge the connection.
	ctx := ctxT(t)
	p := startServe(t, t.TempDir())
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = p.c.Call(cctx, "session/list", nil, nil)
	if err := p.c.Call(ctx, "session/list", nil, nil); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}

func (p *proc) stateDirOf(t *testing.T) string { return p.state }

// TestDemoScriptMatchesTestdata keeps the demo's embedded script and the
// copy offered in testdata/scripts identical.
func TestDemoScriptMatchesTestdata(t *testing.T) {
	b, err := os.ReadFile("../../testdata/scripts/greeter.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, demoScript) {
		t.Fatal("testdata/scripts/greeter.json differs from cmd/planbridge/demo_script.json")
	}
}
