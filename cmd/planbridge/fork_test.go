package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

func forkScript() string {
	return forkScriptThen(`
	 {"text": "Implementing in the fork.\n", "tool_calls": [{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}}]},
	 {"text": "Done.\n"}`)
}

// forkScriptThen is the script [prepareFork] plays (an edit, a note, the
// plan), then the implementation's steps impl (a JSON list's members).
func forkScriptThen(impl string) string {
	return fmt.Sprintf(`[
	 {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "edited by the session\n"}}]},
	 {"text": "Noted.\n"},
	 {"text": %q},%s]`, planText, impl)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// prepareFork: a session edits a file (full-auto), then plans and gets a
// card; an unrelated uncommitted change exists too.
func prepareFork(t *testing.T, ctx context.Context, p *proc, ws string) (sessionInfo, approvalView) {
	t.Helper()
	os.WriteFile(filepath.Join(ws, "stray.txt"), []byte("not the session's\n"), 0o644)
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": "full-auto"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "write notes"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan rename"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	v := getApproval(t, ctx, p.c, s.ID)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "location", Value: "worktree"})
	return s, v
}

func checkFork(t *testing.T, ctx context.Context, c *rpc.Client, state, ws string, s sessionInfo) {
	t.Helper()
	dir := filepath.Join(ws, ".worktrees", "rename")
	if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) && e.Session != s.ID
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("fork greet.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
		t.Errorf("source greet.txt changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "edited by the session\n" {
		t.Errorf("session-edited file not restored in the fork: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray.txt")); err == nil {
		t.Error("a change the session did not make was copied into the fork")
	}
	if out := git(t, ws, "worktree", "list"); !strings.Contains(out, dir) || !strings.Contains(out, "[feature/rename]") {
		t.Errorf("git worktree list:\n%s", out)
	}
	// One administrative directory, the fork's: no orphan of a crashed
	// attempt, no staging directory.
	if ents, _ := os.ReadDir(filepath.Join(ws, ".git", "worktrees")); len(ents) != 1 || ents[0].Name() != "rename" {
		t.Errorf(".git/worktrees holds %v, want only rename", ents)
	}
	if m, _ := filepath.Glob(filepath.Join(ws, ".git", "planbridge-staging-*")); len(m) != 0 {
		t.Errorf("staging left behind: %v", m)
	}
	if out := git(t, dir, "status", "--porcelain", "--untracked-files=no"); strings.TrimSpace(out) != "M greet.txt" && strings.TrimSpace(out) != "M greet.txt\n M notes.txt" {
		// notes.txt is untracked (restored), greet.txt modified by the implementation.
		t.Logf("fork status: %q", out)
	}
	st, err := store.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	forks, _ := st.ForksOf(ctx, s.ID)
	if len(forks) != 1 {
		t.Fatalf("%d forks", len(forks))
	}
	f := forks[0]
	// The fork's own base: the restored edit is part of it, so the report
	// names only what the implementation changed.
	var rep struct {
		Files []struct{ Path, Status string } `json:"files"`
	}
	if err := c.Call(ctx, "report/get", map[string]string{"session": f.ID}, &rep); err != nil || len(rep.Files) != 1 || rep.Files[0].Path != "greet.txt" || rep.Files[0].Status != "modified" {
		t.Errorf("fork report %+v, %v", rep, err)
	}
	src, _ := st.GetSession(ctx, s.ID)
	if src.ForkedTo != f.ID || f.ParentID != s.ID || f.ForkPoint == 0 {
		t.Errorf("links: source→%q fork parent %q point %d", src.ForkedTo, f.ParentID, f.ForkPoint)
	}
	for _, id := range []string{s.ID, f.ID} {
		if _, err := st.GetRetryRecord(ctx, id); err == nil {
			t.Errorf("retry record left in %s", id)
		}
	}
	srcArt, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
	forkArt, _ := filepath.Glob(filepath.Join(state, "sessions", f.ID, "work", "plans", "accepted-*.md"))
	if len(srcArt) != 1 || len(forkArt) != 1 {
		t.Fatalf("artifacts %v %v", srcArt, forkArt)
	}
	a, _ := os.ReadFile(srcArt[0])
	b, _ := os.ReadFile(forkArt[0])
	if string(a) != string(b) {
		t.Error("fork artifact differs")
	}
	msgs, _ := st.Messages(ctx, f.ID)
	if len(msgs) == 0 || !strings.Contains(msgs[0].Content, "write notes") {
		t.Errorf("fork does not carry the planning conversation")
	}
	// The planning session has ended.
	if err := c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "more"}, nil); err == nil || !strings.Contains(err.Error(), "fork") {
		t.Errorf("submit to the ended planning session: %v", err)
	}
}

func TestWorktreeForkEndToEnd(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, forkScript()))
	s, v := prepareFork(t, ctx, p, ws)
	var card struct {
		Notice   string   `json:"notice"`
		Blockers []string `json:"blockers"`
	}
	p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &card)
	if !strings.Contains(card.Notice, "1 uncommitted change(s) stay behind") {
		t.Errorf("card notice %q", card.Notice)
	}
	// (No branch at all means the card's branch: see
	// TestWorktreeCardNamesExistingBranch.)
	for _, bad := range []string{"-x", "a..b", "has space", "x.lock"} {
		err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": bad}, nil)
		if err == nil || !strings.Contains(err.Error(), "branch") {
			t.Errorf("branch %q accepted: %v", bad, err)
		}
	}
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil); err != nil {
		t.Fatal(err)
	}
	checkFork(t, ctx, p.c, state, ws, s)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "forked" && e.Session == s.ID }); err != nil {
		t.Error(err)
	}
	// The main checkout's status lists only what stayed behind, not the
	// forks directory: .git/info/exclude has it, once.
	if st := git(t, ws, "status", "--porcelain", "--untracked-files=all"); strings.Contains(st, ".worktrees") {
		t.Errorf("git status in the main checkout lists the fork:\n%s", st)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".git", "info", "exclude")); err != nil || strings.Count(string(b), "/.worktrees/\n") != 1 {
		t.Errorf("info/exclude = %q, %v", b, err)
	}
	// The fork's own first kickoff runs in this process: nothing of it was
	// paused by a restart.
	for _, e := range p.c.Events() {
		if strings.Contains(string(e.Data), "paused by restart") {
			t.Errorf("%s event of %s during the first kickoff: %s", e.Kind, e.Session, e.Data)
		}
	}
}

// TestWorktreeForkRefusesExistingDirectory: a directory in the fork's place
// is refused with a cleanup command that works for what is really there (a
// plain directory, a registered worktree, with or without the branch);
// after running it the same card forks.
func TestWorktreeForkRefusesExistingDirectory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, ws string)
	}{
		{"empty directory", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, ".worktrees", "rename"), 0o755)
		}},
		{"plain directory", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, ".worktrees", "rename", "junk"), 0o755)
			os.WriteFile(filepath.Join(ws, ".worktrees", "rename", "junk", "f"), []byte("x\n"), 0o644)
		}},
		{"registered worktree and branch", func(t *testing.T, ws string) {
			git(t, ws, "worktree", "add", "-q", "-b", "feature/rename", filepath.Join(ws, ".worktrees", "rename"))
		}},
		{"registered worktree of another branch", func(t *testing.T, ws string) {
			git(t, ws, "worktree", "add", "-q", "-b", "other", filepath.Join(ws, ".worktrees", "rename"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
			tc.prepare(t, ws)
			p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, forkScript()))
			s, v := prepareFork(t, ctx, p, ws)
			err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil)
			// planbridge did not make what is in the way: nothing suggests
			// deleting it (issue 14).
			if err == nil || !strings.Contains(err.Error(), "already exists") ||
				strings.Contains(err.Error(), "remove") || strings.Contains(err.Error(), "-D") || strings.Contains(err.Error(), "rm ") {
				t.Fatalf("want a refusal that deletes nothing, got %v", err)
			}
			if v2 := getApproval(t, ctx, p.c, s.ID); !v2.Pending || v2.Attempt != v.Attempt {
				t.Fatal("a refused acceptance must leave the card pending")
			}
		})
	}
}

// TestWorktreeForkRefusesExistingBranch: a branch that exists is refused
// before acceptance (named in the refusal), so it is never taken over or
// deleted; the card stays pending.
func TestWorktreeForkRefusesExistingBranch(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	git(t, ws, "branch", "feature/rename")
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, forkScript()))
	s, v := prepareFork(t, ctx, p, ws)
	err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil)
	if err == nil || !strings.Contains(err.Error(), "branch feature/rename already exists") || strings.Contains(err.Error(), "-D") {
		t.Fatalf("want a refusal naming the branch, got %v", err)
	}
	if v2 := getApproval(t, ctx, p.c, s.ID); !v2.Pending || v2.Attempt != v.Attempt {
		t.Fatal("a refused acceptance must leave the card pending")
	}
	if out := git(t, ws, "branch", "--list", "feature/rename"); !strings.Contains(out, "feature/rename") {
		t.Fatal("the existing branch is gone")
	}
}

func TestWorktreeForkCrashAtEveryFailpoint(t *testing.T) {
	for _, fp := range handoff.ForkFailpoints {
		t.Run(fp, func(t *testing.T) {
			ctx := ctxT(t)
			ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
			state := t.TempDir()
			script := writeScript(t, forkScript())
			p := startServeEnv(t, []string{handoff.FailpointEnv + "=" + fp}, state, "--engine", "script", "--script", script)
			s, v := prepareFork(t, ctx, p, ws)
			_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil)
			if !waitExit(p, 20*time.Second) {
				t.Fatalf("did not stop at %s", fp)
			}
			// Exactly one session owns the implementation at this point.
			st, err := store.Open(ctx, state)
			if err != nil {
				t.Fatal(err)
			}
			owners := 0
			ids := []string{s.ID}
			forks, _ := st.ForksOf(ctx, s.ID)
			for _, f := range forks {
				ids = append(ids, f.ID)
			}
			for _, id := range ids {
				if _, err := st.GetRetryRecord(ctx, id); err == nil {
					owners++
				}
			}
			st.Close()
			if owners != 1 {
				t.Fatalf("%d sessions own the implementation after crashing at %s", owners, fp)
			}
			p2 := startServe(t, state, "--engine", "script", "--script", script)
			if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
				t.Fatal(err)
			}
			checkFork(t, ctx, p2.c, state, ws, s)
		})
	}
}

// TestWorktreeBlockersBeforeBranch: the card names every fork blocker it
// can know before a branch is asked for (here: no git checkout), so Emacs
// can refuse Worktree before prompting; the acceptance refuses in the same
// words.
func TestWorktreeBlockersBeforeBranch(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, fmt.Sprintf(`[{"text": %q}]`, planText)))
	s, v := proposeAndWait(t, ctx, p, t.TempDir()) // not a git checkout
	update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "location", Value: "worktree"})
	var view struct {
		Attempt  string   `json:"attempt"`
		Blockers []string `json:"blockers"`
	}
	if err := p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &view); err != nil {
		t.Fatal(err)
	}
	if strings.Join(view.Blockers, "; ") != "the workspace is not a git checkout" {
		t.Fatalf("blockers %q", view.Blockers)
	}
	err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": view.Attempt, "branch": "feature/x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "the workspace is not a git checkout") {
		t.Fatalf("accept: %v", err)
	}
}

// TestWorktreeCardNamesExistingBranch: the card's Worktree branch (derived
// from the plan's title, or typed by the person) is checked when the card
// is fetched and when the setting changes: an existing branch is a
// blocker named on the card before acceptance; acceptance checks again.
func TestWorktreeCardNamesExistingBranch(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, forkScript()))
	s, v := prepareFork(t, ctx, p, ws)
	type card struct {
		Attempt       string `json:"attempt"`
		Title         string `json:"title"`
		Branch        string `json:"branch"`
		BranchBlocker string `json:"branch_blocker"`
	}
	get := func() card {
		var c card
		if err := p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	setBranch := func(name string) (card, error) {
		var c card
		err := p.c.Call(ctx, "approval/update", map[string]any{"session": s.ID, "attempt": v.Attempt,
			"change": handoff.Change{Axis: "branch", Value: name}}, &c)
		return c, err
	}
	c := get()
	def := handoff.DefaultBranch(c.Title)
	if def == "" || c.Branch != def || c.BranchBlocker != "" {
		t.Fatalf("a free default branch: %+v (default %q)", c, def)
	}
	// Created since the card was shown: named when the card is fetched.
	git(t, ws, "branch", def)
	if c = get(); c.BranchBlocker != "branch "+def+" already exists; choose another branch name" {
		t.Fatalf("an existing default branch: %+v", c)
	}
	// The person's branch is checked when it is set.
	if c, err := setBranch("feature/free"); err != nil || c.Branch != "feature/free" || c.BranchBlocker != "" {
		t.Fatalf("a free branch: %v %+v", err, c)
	}
	git(t, ws, "branch", "feature/taken")
	if c, err := setBranch("feature/taken"); err != nil || c.BranchBlocker != "branch feature/taken already exists; choose another branch name" {
		t.Fatalf("a taken branch: %v %+v", err, c)
	}
	if _, err := setBranch("bad..name"); err == nil {
		t.Fatal("an invalid branch name was taken")
	}
	// Acceptance naming no branch uses the card's, and checks it again.
	err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
	if err == nil || !strings.Contains(err.Error(), "branch feature/taken already exists") {
		t.Fatalf("accept with the card's taken branch: %v", err)
	}
	if c = get(); c.Attempt != v.Attempt {
		t.Fatal("a refused acceptance must leave the card pending")
	}
	// Back to the default (still taken) with an empty value.
	if c, err := setBranch(""); err != nil || c.Branch != def || !strings.Contains(c.BranchBlocker, "already exists") {
		t.Fatalf("back to the default: %v %+v", err, c)
	}
}

// TestFailedHandOverKeepsThePlan: a hand-over whose commit fails (disk
// full) leaves the planning session holding its tracked plan and its
// retry record, in memory as in the store; recovering once the disk has
// room hands it over and the fork implements it.
func TestFailedHandOverKeepsThePlan(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, forkScript())
	p := startServeEnv(t, []string{"PLANBRIDGE_STORE_FAIL=handover"}, state, "--engine", "script", "--script", script)
	s, v := prepareFork(t, ctx, p, ws)
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil); err != nil {
		t.Fatal(err)
	}
	waitHandoffDone(t, ctx, p.c)
	if tr := getTracking(t, ctx, p.c, s.ID); len(tr.Plan.Steps) == 0 {
		t.Fatalf("the source's plan after a failed hand-over: %+v", tr.Plan)
	}
	var opened struct {
		Session struct {
			ForkedTo string `json:"forked_to"`
		} `json:"session"`
	}
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID, "limit": 1}, &opened); err != nil || opened.Session.ForkedTo != "" {
		t.Fatalf("after a failed hand-over: forked_to %q, %v", opened.Session.ForkedTo, err)
	}
	p.stop()
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if tr := getTracking(t, ctx, p2.c, s.ID); len(tr.Plan.Steps) == 0 {
		t.Fatalf("the source's plan after a restart: %+v", tr.Plan)
	}
	if err := p2.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	checkFork(t, ctx, p2.c, state, ws, s)
}
