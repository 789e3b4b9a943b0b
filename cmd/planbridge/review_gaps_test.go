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
	mu    sync.Mutex
	got   []string
	kinds []string
}

func (a *asks) on(c *rpc.Client, answer func(summary string) bool) {
	c.OnAsk(func(params json.RawMessage) any {
		var p struct{ Summary, Kind string }
		json.Unmarshal(params, &p)
		a.mu.Lock()
		a.got = append(a.got, p.Summary)
		a.kinds = append(a.kinds, p.Kind)
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
		Kept    string   `json:"kept"`
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
	script := forkScriptThen(`
	 {"text": "Implementing in the fork.\n", "tool_calls": [
	   {"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}},
	   {"name": "write_file", "arguments": {"path": "outside.txt", "content": "o\n"}}]},
	 {"text": "Done.\n"}`)
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

func bashCall(cmd string) string { return call("bash", map[string]string{"command": cmd}) }

// TestBashWritesOutsideScopeAskExtendOrRestore: implementation bash
// commands are held to the declared scope in full-auto. What a command
// changed outside it is asked about afterwards: allowed, the scope is
// extended; denied, it is restored as it was before that command. The
// hostile cases: a deletion, a link to /etc/passwd, a git hook, a rename,
// a directory swapped for a link out of the workspace, three thousand
// files, a commit of an outside change; and a trace written and deleted
// again, which is no change.
func TestBashWritesOutsideScopeAskExtendOrRestore(t *testing.T) {
	t.Run("root", func(t *testing.T) { testBashWritesOutsideScopeAskExtendOrRestore(t, false) })
	t.Run("nobody", func(t *testing.T) { testBashWritesOutsideScopeAskExtendOrRestore(t, true) })
}

func testBashWritesOutsideScopeAskExtendOrRestore(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "tracked.txt": "keep me\n", "other.txt": "other\n", "docs/a.md": "# A\n"})
	evil, state := t.TempDir(), t.TempDir()
	commit := "git -c user.name=t -c user.email=t@t commit -qm"
	impl := []string{
		bashCall("printf 'hi\\n' > greet.txt"),
		bashCall("echo x > outside.txt; rm tracked.txt; ln -s /etc/passwd link; printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"),
		bashCall("echo y > kept.txt"),
		bashCall("echo z >> kept.txt"),
		// planbridge's own records lie outside the workspace, not out of reach.
		bashCall("for f in " + state + "/sessions/*/review/b-*/scope.json; do printf '{\"paths\":[\".\"]}' > \"$f\"; done; echo q > widened.txt"),
		bashCall("echo t > trace.txt; rm trace.txt"),
		bashCall("mkdir -p sub && mv other.txt sub/renamed.txt"),
		bashCall("rm -rf docs && ln -s " + evil + " docs"),
		bashCall("mkdir many && for i in $(seq 1 3000); do echo $i > many/$i.txt; done"),
		bashCall("echo w > other.txt && git add other.txt && " + commit + " sneak"),
	}
	script := fmt.Sprintf(`[{"text": %q}, {"text": "Implementing.", "tool_calls": [%s]}, {"text": "Done."}]`, scopedPlan, strings.Join(impl, ","))
	sp := writeScript(t, script)
	p := startServeAs(t, unprivileged, state, []string{ws, filepath.Dir(sp), evil}, "--engine", "script", "--script", sp)
	var a asks
	a.on(p.c, func(s string) bool { return strings.Contains(s, "kept.txt") })
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "full-auto"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	got := a.list()
	wantAsks := [][]string{
		{".git/hooks/pre-commit", "link", "outside.txt", "tracked.txt"},
		{"extend the scope to kept.txt?"},
		{"extend the scope to widened.txt?"},
		{"other.txt", "sub/renamed.txt"},
		{"docs", "docs/a.md"},
		{"many/", "and 2980 more"},
		{"other.txt"},
	}
	if len(got) != len(wantAsks) {
		t.Fatalf("%d asks, want %d: %q", len(got), len(wantAsks), got)
	}
	a.mu.Lock()
	kinds := fmt.Sprint(a.kinds)
	a.mu.Unlock()
	if kinds != "[scope_effects scope_effects scope_effects scope_effects scope_effects scope_effects scope_effects]" {
		t.Errorf("ask kinds %s", kinds)
	}
	for i, w := range wantAsks {
		for _, sub := range w {
			if !strings.Contains(got[i], sub) || !strings.Contains(got[i], "outside the scope declared by the accepted plan") {
				t.Errorf("ask %d %q lacks %q", i, got[i], sub)
			}
		}
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for rel, want := range map[string]string{"greet.txt": "hi\n", "tracked.txt": "keep me\n", "other.txt": "other\n", "docs/a.md": "# A\n", "kept.txt": "y\nz\n"} {
		if got := read(rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	for _, gone := range []string{"outside.txt", "link", ".git/hooks/pre-commit", "sub/renamed.txt", "many/1.txt", "many/3000.txt", "trace.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, gone)); err == nil {
			t.Errorf("%s was not restored away", gone)
		}
	}
	if fi, err := os.Lstat(filepath.Join(ws, "docs")); err != nil || !fi.IsDir() {
		t.Errorf("docs is not a real directory again: %v", err)
	}
	if ents, _ := os.ReadDir(evil); len(ents) != 0 {
		t.Errorf("restoring wrote through the link, into %s: %v", evil, ents)
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/review"}, nil); err != nil {
		t.Fatal(err)
	}
	r := getReport(t, ctx, p.c, s.ID)
	if fmt.Sprint(r.ScopeExtensions) != "[kept.txt]" || len(r.ScopeRestored) != 6 {
		t.Fatalf("extensions %v, %d restorations: %+v", r.ScopeExtensions, len(r.ScopeRestored), r.ScopeRestored)
	}
	for _, rs := range r.ScopeRestored {
		if rs.By != "person" || len(rs.Failed) != 0 || len(rs.Paths) == 0 {
			t.Errorf("restoration %+v", rs)
		}
	}
	// Nothing is lost: what the command left is kept in the state.
	if b, err := os.ReadFile(filepath.Join(state, r.ScopeRestored[0].Kept, "outside.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("kept outside.txt: %q %v (kept in %q)", b, err, r.ScopeRestored[0].Kept)
	}
	if b, err := os.ReadFile(filepath.Join(state, r.ScopeRestored[0].Kept, ".git/hooks/pre-commit")); err != nil || !strings.Contains(string(b), "pwned") {
		t.Errorf("kept hook: %q %v", b, err)
	}
	if n := len(r.ScopeRestored[4].Paths); n != 3000 {
		t.Errorf("restored %d of the 3000 files", n)
	}
	files := fileStats(r)
	if files["greet.txt"] != "modified +1 -1" || files["kept.txt"] != "added +2 -0" {
		t.Errorf("report files %v", files)
	}
	for _, f := range r.Files {
		if f.Path == "kept.txt" && !f.Outside {
			t.Errorf("kept.txt not outside the plan: %+v", f)
		}
	}
	// The model was told what happened to its command's effects.
	told, records := 0, 0
	for _, e := range p.c.Events() {
		if e.Kind == "tool_result" && strings.Contains(string(e.Data), "they were restored as they were before it") {
			told++
		}
		if e.Kind == "tool_result" && strings.Contains(string(e.Data), "changed planbridge's own records of the implementation (scope.json)") {
			records++
		}
	}
	if told != 6 || records != 1 {
		t.Errorf("%d tool results tell of a restoration (want 6), %d of the records restored (want 1)", told, records)
	}
	if _, err := os.Stat(filepath.Join(ws, "widened.txt")); err == nil {
		t.Error("a command widened its own scope")
	}
}

// TestBashOutsideScopeUnattendedRestoresAndPauses: an unattended Goal
// continuation whose bash command writes outside the scope asks nobody:
// the write is restored and the implementation and its Goal pause.
func TestBashOutsideScopeUnattendedRestoresAndPauses(t *testing.T) {
	t.Run("root", func(t *testing.T) { testBashOutsideScopeUnattendedRestoresAndPauses(t, false) })
	t.Run("nobody", func(t *testing.T) { testBashOutsideScopeUnattendedRestoresAndPauses(t, true) })
}

func testBashOutsideScopeUnattendedRestoresAndPauses(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "shared.txt": "shared\n"})
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Editing.", "tool_calls": [%s]},
	 {"text": "First turn done."},
	 {"expect_contains": ["Continue working toward the active Goal."], "text": "More.", "tool_calls": [%s]},
	 {"text": "should not be reached"}]`, scopedPlan,
		bashCall("sed -i s/hello/hi/ greet.txt"),
		bashCall("echo x > elsewhere.txt; echo y >> shared.txt"))
	sp := writeScript(t, script)
	p := startServeAs(t, unprivileged, t.TempDir(), []string{ws, filepath.Dir(sp)}, "--engine", "script", "--script", sp)
	p.c.OnAsk(func(json.RawMessage) any { t.Error("an unattended turn asked"); return map[string]bool{"allow": true} })
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 0, "")
	g := waitGoal(t, ctx, p.c, s.ID, "paused")
	if !strings.Contains(g.Goal.Reason, "outside the declared scope") || !strings.Contains(g.Goal.Reason, "elsewhere.txt") {
		t.Fatalf("goal %+v", g.Goal)
	}
	if _, err := os.Stat(filepath.Join(ws, "elsewhere.txt")); err == nil {
		t.Error("the unattended command's file outside the scope stayed")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "shared.txt")); string(b) != "shared\n" {
		t.Errorf("shared.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("greet.txt %q", b)
	}
	r := getReport(t, ctx, p.c, s.ID)
	if len(r.ScopeRestored) != 1 || r.ScopeRestored[0].By != "unattended" || fmt.Sprint(r.ScopeRestored[0].Paths) != "[elsewhere.txt shared.txt]" {
		t.Fatalf("restorations %+v", r.ScopeRestored)
	}
}

// TestReportOfGoalInWorktree: a Goal implemented in a Worktree fork gets
// its report when the Goal completes, against the fork's own base.
func TestReportOfGoalInWorktree(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	script := forkScriptThen(`
	 {"text": "Implementing.\n", "tool_calls": [
	   {"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}},
	   {"name": "update_goal", "arguments": {"status": "complete", "summary": "greet.txt says hi"}}]},
	 {"text": "Goal complete.\n"}`)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, v := prepareFork(t, ctx, p, ws)
	budget := int64(0)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "execution", Value: "goal"})
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "budget", Budget: &budget})
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil); err != nil {
		t.Fatal(err)
	}
	ev, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "forked" && e.Session == s.ID })
	if err != nil {
		t.Fatal(err)
	}
	var forked struct{ Fork string }
	json.Unmarshal(ev.Data, &forked)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "report" && e.Session == forked.Fork }); err != nil {
		t.Fatalf("no report when the fork's Goal completed: %v", err)
	}
	var open struct {
		Report *gapReport `json:"report"`
	}
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": forked.Fork}, &open); err != nil || open.Report == nil {
		t.Fatalf("stored report of the fork: %v %+v", err, open.Report)
	}
	if fmt.Sprint(fileStats(*open.Report)) != fmt.Sprint(map[string]string{"greet.txt": "modified +1 -1"}) {
		t.Fatalf("fork Goal report files %v", fileStats(*open.Report))
	}
}

// TestKilledDuringWatchedCommandIsUnsettled: the process is SIGKILLed
// while a watched command runs, after it wrote outside the scope. Nothing
// asked or restored, and the report says so after the restart instead of
// passing the command off as held.
func TestKilledDuringWatchedCommandIsUnsettled(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	// The command waits for the test: it is in flight when the process is
	// killed, and ends (it outlives the process) once the test says so.
	release := filepath.Join(t.TempDir(), "release")
	cmd := "echo x > outside.txt; while [ ! -e " + release + " ]; do sleep 0.05; done"
	script := writeScript(t, fmt.Sprintf(`[{"text": %q}, {"text": "Implementing.", "tool_calls": [%s]}, {"text": "Done."}]`, scopedPlan, bashCall(cmd)))
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", script)
	p.c.OnAsk(func(json.RawMessage) any {
		t.Error("asked before the command ended")
		return map[string]bool{"allow": false}
	})
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "full-auto"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(ws, "outside.txt")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the command never wrote")
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	os.WriteFile(release, nil, 0o644)
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/review"}, nil); err != nil {
		t.Fatal(err)
	}
	var r struct {
		gapReport
		Unsettled []string `json:"scope_unsettled"`
	}
	if err := p2.c.Call(ctx, "report/get", map[string]string{"session": s.ID}, &r); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r.Unsettled) != "["+cmd+"]" || fmt.Sprint(r.Outside) != "[outside.txt]" {
		t.Fatalf("unsettled %q, outside %q", r.Unsettled, r.Outside)
	}
	// Built again, it still says so: the mark became a record.
	if err := p2.c.Call(ctx, "report/get", map[string]string{"session": s.ID}, &r); err != nil || len(r.Unsettled) != 1 {
		t.Fatalf("second report: unsettled %q, %v", r.Unsettled, err)
	}
	code, out, _ := runBinary(t, "", "report", "--state-dir", state, s.ID)
	if code != 0 || !strings.Contains(out, "NOT HELD TO THE SCOPE (stopped before its effects were compared): `"+cmd+"`") {
		t.Fatalf("report text: %d\n%s", code, out)
	}
}

// TestBashOutsideScopeFromShareLinkRestoresAndPauses: a prompt sent from a
// share link runs a turn no person can answer for: its bash command's
// write outside the scope is restored and the implementation pauses,
// nobody is asked.
func TestBashOutsideScopeFromShareLinkRestoresAndPauses(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	script := writeScript(t, fmt.Sprintf(`[{"text": %q},
	 {"text": "Editing.", "tool_calls": [%s]},
	 {"text": "First part done."},
	 {"expect_contains": ["tidy up from the browser"], "text": "Tidying.", "tool_calls": [%s]},
	 {"text": "Tidied."}]`, scopedPlan,
		bashCall("sed -i s/hello/hi/ greet.txt"),
		bashCall("echo x > from-browser.txt")))
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script, "--share-listen", "127.0.0.1:0")
	p.c.OnAsk(func(m json.RawMessage) any {
		t.Errorf("a share-link turn asked: %s", m)
		return map[string]bool{"allow": true}
	})
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "full-auto"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	// Full-auto, so the command itself needs no permission: only its
	// effects are in question.
	if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": "full-auto"}, nil); err != nil {
		t.Fatal(err)
	}
	var shared struct{ Links []shareLink }
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "tiers": []string{"full"}}, &shared); err != nil {
		t.Fatal(err)
	}
	if code, body := sharePrompt(t, shared.Links[0].URL, "tidy up from the browser"); code != 200 {
		t.Fatalf("share prompt: %d %s", code, body)
	}
	waitTurnEnd(t, ctx, p.c, 3)
	if _, err := os.Stat(filepath.Join(ws, "from-browser.txt")); err == nil {
		t.Error("the share-link turn's write outside the scope stayed")
	}
	var tr struct {
		Plan struct{ Status, Reason string } `json:"plan"`
	}
	if err := p.c.Call(ctx, "session/tracking", map[string]string{"session": s.ID}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Plan.Status != "paused" || !strings.Contains(tr.Plan.Reason, "from-browser.txt") {
		t.Fatalf("tracking %+v", tr)
	}
	r := getReport(t, ctx, p.c, s.ID)
	if len(r.ScopeRestored) != 1 || r.ScopeRestored[0].By != "unattended" {
		t.Fatalf("restorations %+v", r.ScopeRestored)
	}
}
