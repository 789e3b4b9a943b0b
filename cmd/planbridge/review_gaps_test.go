package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/rpc"
)

// asks records permission/ask summaries and answers each with answer.
type asks struct {
	mu  sync.Mutex
	got []string
}

func (a *asks) on(c *rpc.Client, answer func(summary string) bool) {
	c.OnAsk(func(params json.RawMessage) any {
		var p struct{ Summary string }
		json.Unmarshal(params, &p)
		a.mu.Lock()
		a.got = append(a.got, p.Summary)
		a.mu.Unlock()
		return map[string]bool{"allow": answer(p.Summary)}
	})
}

func (a *asks) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

type gapReport struct {
	reportJSON
	Base          string `json:"base"`
	ScopeRestored []struct {
		Command string   `json:"command"`
		Paths   []string `json:"paths"`
		Failed  []string `json:"failed"`
		By      string   `json:"by"`
	} `json:"scope_restored"`
}

func getReport(t *testing.T, ctx context.Context, c *rpc.Client, sess string) gapReport {
	t.Helper()
	var r gapReport
	if err := c.Call(ctx, "report/get", map[string]string{"session": sess}, &r); err != nil {
		t.Fatalf("report/get %s: %v", sess, err)
	}
	return r
}

func fileStats(r gapReport) map[string]string {
	out := map[string]string{}
	for _, f := range r.Files {
		out[f.Path] = fmt.Sprintf("%s +%d -%d", f.Status, f.Added, f.Removed)
	}
	return out
}

// TestReportAndScopeInWorktreeFork: the fork records its own base (the
// base commit plus the edits restored into it), so its implementation is
// held to the scope and gets a report naming only what it changed.
func TestReportAndScopeInWorktreeFork(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	script := fmt.Sprintf(`[
	 {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "edited by the session\n"}}]},
	 {"text": "Noted.\n"},
	 {"text": %q},
	 {"text": "Implementing in the fork.\n", "tool_calls": [
	   {"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}},
	   {"name": "write_file", "arguments": {"path": "outside.txt", "content": "o\n"}}]},
	 {"text": "Done.\n"}]`, planText)
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, script))
	var a asks
	a.on(p.c, func(string) bool { return true })
	s, v := prepareFork(t, ctx, p, ws)
	head := strings.TrimSpace(git(t, ws, "rev-parse", "HEAD"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil); err != nil {
		t.Fatal(err)
	}
	ev, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "forked" && e.Session == s.ID })
	if err != nil {
		t.Fatal(err)
	}
	var forked struct{ Fork string }
	json.Unmarshal(ev.Data, &forked)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "turn_end" && e.Session == forked.Fork
	}); err != nil {
		t.Fatal(err)
	}
	// Full-auto, yet the write outside the scope asked.
	if got := a.list(); len(got) != 1 || !strings.Contains(got[0], "extend the scope to outside.txt?") {
		t.Fatalf("asked %q", got)
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": forked.Fork, "text": "/review"}, nil); err != nil {
		t.Fatal(err)
	}
	r := getReport(t, ctx, p.c, forked.Fork)
	// notes.txt was restored into the fork before the implementation: base.
	want := map[string]string{"greet.txt": "modified +1 -1", "outside.txt": "added +1 -0"}
	if fmt.Sprint(fileStats(r)) != fmt.Sprint(want) || r.Base != head || fmt.Sprint(r.ScopeExtensions) != "[outside.txt]" {
		t.Fatalf("fork report files %v base %s (want %s) extensions %v", fileStats(r), r.Base, head, r.ScopeExtensions)
	}
	var fd struct{ Diff string }
	if err := p.c.Call(ctx, "report/fileDiff", map[string]string{"session": forked.Fork, "path": "greet.txt"}, &fd); err != nil || fd.Diff != "--- a/greet.txt\n+++ b/greet.txt\n@@ -1 +1 @@\n-hello\n+hi\n" {
		t.Fatalf("fork diff %q %v", fd.Diff, err)
	}
	// The planning session holds no implementation of its own.
	if err := p.c.Call(ctx, "report/get", map[string]string{"session": s.ID}, nil); err == nil {
		t.Error("the planning session has a report")
	}
}

// TestReportOfParkedStartUsesTheWorkspaceAtStart: a plan parked, the
// workspace changed afterwards, then started: the base is the workspace at
// the start, so the person's later edit is not the implementation's.
func TestReportOfParkedStartUsesTheWorkspaceAtStart(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "mine.txt": "a\n"})
	script := writeScript(t, handoffScript(false))
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	var parked parkedInfo
	if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "mine.txt"), []byte("a\nb\n"), 0o644) // after park, before start
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) }); err != nil {
		t.Fatal(err)
	}
	r := getReport(t, ctx, p.c, s.ID)
	if fmt.Sprint(fileStats(r)) != fmt.Sprint(map[string]string{"greet.txt": "modified +1 -1"}) || r.Title != "Rename the greeting" {
		t.Fatalf("report of the started parked plan: %v %+v", fileStats(r), r)
	}
}

// TestBaseSurvivesCrashAfterAcceptanceCommit: the process dies right after
// the acceptance commit; a file dirty at acceptance then changes before
// the restart. The base is what acceptance saw, never the workspace at
// recovery, so that later change is in the report.
func TestBaseSurvivesCrashAfterAcceptanceCommit(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "draft.txt": "x\n"})
	os.WriteFile(filepath.Join(ws, "draft.txt"), []byte("x\ndirty at acceptance\n"), 0o644)
	state := t.TempDir()
	script := writeScript(t, handoffScript(false))
	p := startServeEnv(t, []string{handoff.FailpointEnv + "=handoff.committed"}, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
	if !waitExit(p, 20*time.Second) {
		t.Fatal("the process did not stop at handoff.committed")
	}
	os.WriteFile(filepath.Join(ws, "draft.txt"), []byte("x\nchanged after the crash\n"), 0o644)
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) }); err != nil {
		t.Fatal(err)
	}
	r := getReport(t, ctx, p2.c, s.ID)
	want := map[string]string{"greet.txt": "modified +1 -1", "draft.txt": "modified +1 -1"}
	if fmt.Sprint(fileStats(r)) != fmt.Sprint(want) {
		t.Fatalf("report after the crash: %v", fileStats(r))
	}
	var fd struct{ Diff string }
	if err := p2.c.Call(ctx, "report/fileDiff", map[string]string{"session": s.ID, "path": "draft.txt"}, &fd); err != nil ||
		!strings.Contains(fd.Diff, "-dirty at acceptance\n+changed after the crash\n") {
		t.Fatalf("draft.txt diff %q %v", fd.Diff, err)
	}
}
