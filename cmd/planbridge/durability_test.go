package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

// TestTwoServersOneStateDir: a second serve on a state directory in use
// exits at once, naming the running process on stderr and answering the
// client's initialize with the same reason; the first keeps serving.
func TestTwoServersOneStateDir(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	p1 := startServe(t, state)
	createSession(t, ctx, p1.c, t.TempDir()) // the first is up and holds the lock
	p2 := startServe(t, state)
	err := p2.c.Call(ctx, "initialize", map[string]any{}, nil)
	var werr struct {
		Code string `json:"code"`
	}
	if err == nil {
		t.Fatal("the second server answered initialize")
	}
	var je interface{ Error() string } = err
	if !strings.Contains(je.Error(), fmt.Sprintf("pid %d", p1.cmd.Process.Pid)) {
		t.Errorf("client error does not name the running process: %v", err)
	}
	_ = werr
	done := make(chan error, 1)
	go func() { done <- p2.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second server did not exit")
	}
	if code := p2.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d", code)
	}
	if msg := p2.stderr.String(); !strings.Contains(msg, "in use") || !strings.Contains(msg, fmt.Sprintf("pid %d", p1.cmd.Process.Pid)) {
		t.Errorf("stderr: %q", msg)
	}
	// The first server is unaffected.
	createSession(t, ctx, p1.c, t.TempDir())
	// Without a client request the refusal is just as quick, on stderr.
	cmd := exec.Command(binary, "serve", "--state-dir", state)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "in use") {
		t.Errorf("second server without a client: %d %s", cmd.ProcessState.ExitCode(), out)
	}
}

// dirSnapshot lists every file under dir with its size and content hash.
func dirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		b, _ := os.ReadFile(p)
		lines = append(lines, fmt.Sprintf("%s %d %s", rel, info.Size(), hashOf(string(b))))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestDamagedStateRefusesToStart: a database that is missing or empty
// while sessions exist, one behind its session files (its -wal deleted
// after a kill) or a corrupt one refuses to start with a clear error,
// changes no file, and doctor reports it.
func TestDamagedStateRefusesToStart(t *testing.T) {
	cases := []struct {
		name, want string
		damage     func(t *testing.T, state string)
		kill       bool
	}{
		{"missing database", "missing", func(t *testing.T, state string) {
			for _, f := range []string{"state.db", "state.db-wal", "state.db-shm"} {
				os.Remove(filepath.Join(state, f))
			}
		}, false},
		{"empty database", "empty (0 bytes)", func(t *testing.T, state string) {
			os.Remove(filepath.Join(state, "state.db-wal"))
			os.Remove(filepath.Join(state, "state.db-shm"))
			os.Truncate(filepath.Join(state, "state.db"), 0)
		}, false},
		{"deleted wal after a kill", "session", func(t *testing.T, state string) {
			if err := os.Remove(filepath.Join(state, "state.db-wal")); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(state, "state.db-shm"))
		}, true},
		{"corrupt database", "", func(t *testing.T, state string) {
			os.Remove(filepath.Join(state, "state.db-wal"))
			os.Remove(filepath.Join(state, "state.db-shm"))
			os.WriteFile(filepath.Join(state, "state.db"), []byte(strings.Repeat("not a database ", 500)), 0o600)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			state := t.TempDir()
			p := startServe(t, state)
			s := createSession(t, ctx, p.c, t.TempDir())
			if c.kill {
				p.cmd.Process.Signal(syscall.SIGKILL)
				p.cmd.Wait()
			} else {
				p.stop()
			}
			if _, err := os.Stat(filepath.Join(state, "sessions", s.ID)); err != nil {
				t.Fatalf("no session directory: %v", err)
			}
			c.damage(t, state)
			before := dirSnapshot(t, state)
			cmd := exec.Command(binary, "serve", "--state-dir", state)
			cmd.Stdin = strings.NewReader("")
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "damaged") || !strings.Contains(string(out), c.want) {
				t.Errorf("serve on a damaged state dir: exit %d, %s", cmd.ProcessState.ExitCode(), out)
			}
			// serve.lock is the only file a refused start may create.
			after := dirSnapshot(t, state)
			if strip(after) != strip(before) {
				t.Errorf("files changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			dr := exec.Command(binary, "doctor", "--state-dir", state)
			dout, _ := dr.CombinedOutput()
			if dr.ProcessState.ExitCode() == 0 || !strings.Contains(string(dout), "FAIL") {
				t.Errorf("doctor on a damaged state dir: %s", dout)
			}
		})
	}
}

func strip(snap string) string {
	var keep []string
	for _, l := range strings.Split(snap, "\n") {
		if !strings.HasPrefix(l, "serve.lock ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestDoctorFullIntegrityCheck: doctor on a healthy state reports the full
// check passing.
func TestDoctorFullIntegrityCheck(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	p := startServe(t, state)
	createSession(t, ctx, p.c, t.TempDir())
	p.stop()
	out, err := exec.Command(binary, "doctor", "--state-dir", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "full integrity check passed") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}

// TestFailingWriteFailsTheTurn: with the disk full at the turn's commit
// (an ENOSPC failpoint) the turn ends ok:false with an error event; it is
// never reported as a success with its reply missing.
func TestFailingWriteFailsTheTurn(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	script := writeScript(t, `[{"text": "A reply.\n"}]`)
	p := startServeEnv(t, []string{store.FailCommitsEnv + "=" + store.OpTurn}, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, t.TempDir())
	p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "hello"}, nil)
	end, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "turn_end" })
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	json.Unmarshal(end.Data, &d)
	if d.OK || !strings.Contains(d.Error, "no space left") {
		t.Errorf("turn_end %s", end.Data)
	}
	sawError := false
	for _, e := range p.c.Events() {
		if e.Kind == "error" && strings.Contains(string(e.Data), "no space left") {
			sawError = true
		}
	}
	if !sawError {
		t.Error("no error event")
	}
}

// TestFailingWriteFailsEachHandoffStep: a commit failing at each handoff
// step fails that step visibly (never "done" before the final commit); the
// accepted plan stays recoverable and, the disk freed (a restart without
// the failpoint), the one recovery path finishes it exactly once.
func TestFailingWriteFailsEachHandoffStep(t *testing.T) {
	cases := []struct {
		op, context, execution string
	}{
		{store.OpAcceptance, "current", "direct"},
		{store.OpRecord, "current", "direct"},
		{store.OpRecord, "summary", "direct"},
		{store.OpSegment, "fresh", "direct"},
		{store.OpDispatch, "current", "direct"},
		{store.OpTurn, "current", "direct"},
		{store.OpGoal, "current", "goal"},
	}
	for _, c := range cases {
		t.Run(c.op+"/"+c.context+"/"+c.execution, func(t *testing.T) {
			ctx := ctxT(t)
			ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
			state := t.TempDir()
			steps := goalCompleteScript(c.context == "summary")
			if c.execution == "direct" {
				steps = handoffScript(c.context == "summary")
			}
			// The script replays in order, so the requests the failed step
			// already made are scripted twice: a summary whose commit
			// failed is requested again, and a turn whose reply could not
			// be stored is continued (the model did not see it happen).
			var list []json.RawMessage
			if err := json.Unmarshal([]byte(steps), &list); err != nil {
				t.Fatal(err)
			}
			switch {
			case c.op == store.OpRecord && c.context == "summary":
				list = append(list[:2], list[1:]...)
			case c.op == store.OpTurn:
				list = append(list[:2], list[1:]...)
			}
			b, _ := json.Marshal(list)
			script := writeScript(t, string(b))
			p := startServe(t, state, "--engine", "script", "--script", script)
			s, v := proposeAndWait(t, ctx, p, ws)
			budget := int64(0)
			changes := []handoff.Change{{Axis: "mode", Value: "full-auto"}, {Axis: "context", Value: c.context}}
			if c.execution == "goal" {
				changes = append(changes, handoff.Change{Axis: "execution", Value: "goal"}, handoff.Change{Axis: "budget", Budget: &budget})
			}
			for _, ch := range changes {
				v = update(t, ctx, p.c, s.ID, v.Attempt, ch)
			}
			p.stop()
			// The same state, now with the disk "full" for one operation.
			p = startServeEnv(t, []string{store.FailCommitsEnv + "=" + c.op}, state, "--engine", "script", "--script", script)
			v = getApproval(t, ctx, p.c, s.ID)
			err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
			if c.op == store.OpAcceptance {
				if err == nil || !strings.Contains(err.Error(), "no space left") {
					t.Fatalf("accept with a failing commit: %v", err)
				}
				if v2 := getApproval(t, ctx, p.c, s.ID); !v2.Pending {
					t.Fatal("a failed acceptance must leave the card pending")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				ev, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
					return e.Kind == "handoff" && (strings.Contains(string(e.Data), `"failed"`) || strings.Contains(string(e.Data), `"done"`))
				})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(ev.Data), `"failed"`) {
					t.Fatalf("handoff reported %s with its %s commit failing", ev.Data, c.op)
				}
			}
			p.stop()
			p = startServe(t, state, "--engine", "script", "--script", script)
			if c.op == store.OpAcceptance {
				v = getApproval(t, ctx, p.c, s.ID)
				if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
					t.Fatal(err)
				}
			} else if err := p.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, nil); err != nil {
				t.Fatal(err)
			}
			if c.execution == "goal" {
				waitGoal(t, ctx, p.c, s.ID, "complete")
			} else {
				waitHandoffDone(t, ctx, p.c)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
				t.Errorf("greet.txt = %q", b)
			}
			if _, err := p.opened(t).GetRetryRecord(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("retry record left: %v", err)
			}
			kickoffs := 0
			var opened struct {
				Events []rpc.Event `json:"events"`
			}
			p.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened)
			for _, e := range opened.Events {
				if e.Kind == "user" && strings.Contains(string(e.Data), "Implement accepted plan") {
					kickoffs++
				}
			}
			// A kickoff whose dispatch commit failed is shown as failed; the
			// recovery then sends it, for the first time.
			if want := map[bool]int{true: 2, false: 1}[c.op == store.OpDispatch]; kickoffs != want {
				t.Errorf("%d kickoff events", kickoffs)
			}
		})
	}
	_ = context.Background
}

// TestQueuedInputSurvivesRestart: a follow-up queued behind a running turn
// is durable: after a SIGKILL, or after planbridge stops as Emacs exits,
// it is still queued, and the one recovery command runs it (the model
// receives it) exactly once.
func TestQueuedInputSurvivesRestart(t *testing.T) {
	t.Run("killed", func(t *testing.T) { queuedInputSurvives(t, false) })
	t.Run("stopped", func(t *testing.T) { queuedInputSurvives(t, true) })
}

func queuedInputSurvives(t *testing.T, clean bool) {
	ctx := ctxT(t)
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": "%s", "delay_ms": 40},
	 {"expect_contains": ["then say the word otter"], "text": "otter\n"}]`, strings.Repeat("thinking ", 300)))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, t.TempDir())
	p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "think"}, nil)
	var q struct{ Queued bool }
	if err := p.c.Call(ctx, "session/queue", map[string]string{"session": s.ID, "text": "then say the word otter"}, &q); err != nil || !q.Queued {
		t.Fatalf("queue: %v %+v", err, q)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" }); err != nil {
		t.Fatal(err)
	}
	if clean {
		p.stop() // end of input: planbridge stops as it does when Emacs exits
	} else {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	var opened struct {
		Session struct{ Queued int } `json:"session"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil || opened.Session.Queued != 1 {
		t.Fatalf("after restart: %v queued=%d", err, opened.Session.Queued)
	}
	var res struct{ Action string }
	if err := p2.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, &res); err != nil || res.Action != "queue" {
		t.Fatalf("recover: %v %+v", err, res)
	}
	waitTurnEnd(t, ctx, p2.c, 1)
	if !strings.Contains(lastTurnEnd(p2.c.Events()), `"ok":true`) {
		t.Fatalf("the queued turn failed: %s", lastTurnEnd(p2.c.Events()))
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil || opened.Session.Queued != 0 {
		t.Fatalf("still queued: %v %d", err, opened.Session.Queued)
	}
	p2.stop()
	if qs, _ := p2.opened(t).QueuedInputs(ctx, s.ID); len(qs) != 0 {
		t.Errorf("%d queue rows left", len(qs))
	}
}

// TestSessionOpenPaging: since+limit pages through the log in order, with
// more telling whether another page follows; no limit returns everything.
func TestSessionOpenPaging(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir())
	s := createSession(t, ctx, p.c, t.TempDir())
	for _, m := range []string{"edits", "full-auto", "ask", "edits", "ask"} {
		if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": m}, nil); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Events []rpc.Event `json:"events"`
		More   bool        `json:"more"`
	}
	var all page
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &all); err != nil || all.More || len(all.Events) < 6 {
		t.Fatalf("no limit: %v %d more=%v", err, len(all.Events), all.More)
	}
	var got []int64
	since := int64(0)
	for {
		var pg page
		if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID, "since": since, "limit": 2}, &pg); err != nil {
			t.Fatal(err)
		}
		if len(pg.Events) > 2 {
			t.Fatalf("page of %d", len(pg.Events))
		}
		for _, e := range pg.Events {
			got = append(got, e.Seq)
			since = e.Seq
		}
		if !pg.More {
			break
		}
	}
	if len(got) != len(all.Events) {
		t.Fatalf("paged %v, all %d", got, len(all.Events))
	}
	for i, e := range all.Events {
		if got[i] != e.Seq {
			t.Fatalf("paged %v", got)
		}
	}
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID, "limit": -1}, nil); err == nil {
		t.Error("negative limit accepted")
	}
}

// TestGuestPromptSurvivesRestart: a prompt sent through a share link while
// a turn runs is durable like a person's: after a SIGKILL it is still
// queued, the one recovery command runs it exactly once, and its turn is
// still a guest's (unattended): a write to .git/config is refused, never
// asked, even in full-auto.
func TestGuestPromptSurvivesRestart(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	cfgPath := filepath.Join(ws, ".git", "config")
	original, _ := os.ReadFile(cfgPath)
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": "%s", "delay_ms": 40},
	 {"expect_contains": ["guest asks for the otter"], "tool_calls": [{"name": "write_file", "arguments": {"path": ".git/config", "content": %q}}]},
	 {"text": "otter\n"}]`, strings.Repeat("thinking ", 300), fsmonitorConfig))
	p := startServe(t, state, "--engine", "script", "--script", script, "--share-listen", "127.0.0.1:0")
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": "full-auto"}, nil); err != nil {
		t.Fatal(err)
	}
	var shared struct{ Links []shareLink }
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "tiers": []string{"full"}}, &shared); err != nil || len(shared.Links) != 1 {
		t.Fatalf("share/start: %v %+v", err, shared)
	}
	p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "think"}, nil)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" }); err != nil {
		t.Fatal(err)
	}
	base, key, _ := strings.Cut(shared.Links[0].URL, "#k=")
	req, _ := http.NewRequest("POST", base+"/prompt", strings.NewReader(`{"text": "the guest asks for the otter"}`))
	req.Header.Set("X-Planbridge-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"queued":true`) {
		t.Fatalf("guest prompt: %d %s", res.StatusCode, body)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	asked := 0
	var mu sync.Mutex
	p2.c.OnAsk(func(json.RawMessage) any {
		mu.Lock()
		asked++
		mu.Unlock()
		return map[string]bool{"allow": true}
	})
	var opened struct {
		Session struct{ Queued int } `json:"session"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil || opened.Session.Queued != 1 {
		t.Fatalf("after restart: %v queued=%d (the guest's prompt was lost)", err, opened.Session.Queued)
	}
	var rec struct{ Action string }
	if err := p2.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, &rec); err != nil || rec.Action != "queue" {
		t.Fatalf("recover: %v %+v", err, rec)
	}
	waitTurnEnd(t, ctx, p2.c, 1)
	if b, _ := os.ReadFile(cfgPath); !bytes.Equal(b, original) {
		t.Fatalf(".git/config changed by the guest's prompt after a restart: %q", b)
	}
	mu.Lock()
	if asked != 0 {
		t.Errorf("asked %d times during the guest's turn", asked)
	}
	mu.Unlock()
	refused, users := false, 0
	for _, e := range p2.c.Events() {
		if e.Kind == "blocked" && strings.Contains(string(e.Data), `"code":"protected_path"`) {
			refused = true
		}
	}
	if !refused {
		t.Error("no protected_path refusal: the guest's turn ran attended")
	}
	var all struct {
		Events []rpc.Event `json:"events"`
	}
	p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &all)
	for _, e := range all.Events {
		if e.Kind == "user" && strings.Contains(string(e.Data), "guest asks for the otter") {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the guest's prompt ran %d times", users)
	}
	p2.stop()
	if qs, _ := p2.opened(t).QueuedInputs(ctx, s.ID); len(qs) != 0 {
		t.Errorf("%d queue rows left", len(qs))
	}
}
