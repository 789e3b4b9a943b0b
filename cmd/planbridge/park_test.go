package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

type parkedInfo struct {
	ID        string            `json:"id"`
	Session   string            `json:"session"`
	Title     string            `json:"title"`
	Hash      string            `json:"hash"`
	Artifact  string            `json:"artifact"`
	Selection handoff.Selection `json:"selection"`
	Head      string            `json:"head"`
	Started   bool              `json:"started"`
	Location  string            `json:"location"`
	Trailer   string            `json:"trailer"`
}

type startInfo struct {
	Started   bool   `json:"started"`
	Session   string `json:"session"`
	StaleBase bool   `json:"stale_base"`
	Notice    string `json:"notice"`
}

func listParked(t *testing.T, ctx context.Context, c *rpc.Client, params map[string]any) []parkedInfo {
	t.Helper()
	var ps []parkedInfo
	if err := c.Call(ctx, "plan/parked", params, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func countEvents(evs []rpc.Event, kind, substr string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind && strings.Contains(string(e.Data), substr) {
			n++
		}
	}
	return n
}

func storedEvents(t *testing.T, ctx context.Context, c *rpc.Client, sess string) []rpc.Event {
	t.Helper()
	var open struct {
		Events []rpc.Event `json:"events"`
	}
	if err := c.Call(ctx, "session/open", map[string]string{"session": sess}, &open); err != nil {
		t.Fatal(err)
	}
	return open.Events
}

// TestParkRestartStartInWorktree: approve-and-park archives the plan with
// its whole selection and starts nothing; after a restart the parked plan
// is listed unchanged and starts in a Worktree through the durable
// handoff: one archive, one kickoff, the parked selection; it never
// starts twice.
func TestParkRestartStartInWorktree(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, handoffScript(false))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "edits"})
	v2 := update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "instructions", Value: "Keep the diff tiny."})
	var parked parkedInfo
	if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
		t.Fatal(err)
	}
	if parked.ID == "" || parked.Started || parked.Selection.Mode != "edits" || parked.Selection.Instructions != "Keep the diff tiny." ||
		parked.Title != "Rename the greeting" || len(parked.Head) != 40 || !strings.HasPrefix(parked.Trailer, "Plan: Rename the greeting (sha256:") {
		t.Fatalf("parked %+v (card selection %+v)", parked, v2.Selection)
	}
	// The decision is final for that card: neither accept nor park again.
	for _, m := range []string{"approval/accept", "approval/park"} {
		if err := p.c.Call(ctx, m, map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err == nil || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("%s after park: %v", m, err)
		}
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan parked"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "notice" && strings.Contains(string(e.Data), parked.ID) }); err != nil {
		t.Fatal(err)
	}
	evs := storedEvents(t, ctx, p.c, s.ID)
	if countEvents(evs, "approval_closed", `"parked"`) != 1 || countEvents(evs, "turn_start", "") != 1 || countEvents(evs, "handoff", "") != 0 {
		t.Fatalf("park started something: %d closed, %d turns, %d handoffs", countEvents(evs, "approval_closed", `"parked"`),
			countEvents(evs, "turn_start", ""), countEvents(evs, "handoff", ""))
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
		t.Fatalf("park changed the workspace: %q", b)
	}
	p.stop()
	{
		st, err := store.Open(ctx, state)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetRetryRecord(ctx, s.ID); err == nil {
			t.Fatal("park wrote a retry record")
		}
		st.Close()
	}

	p = startServe(t, state, "--engine", "script", "--script", script)
	ps := listParked(t, ctx, p.c, map[string]any{})
	if len(ps) != 1 || ps[0].ID != parked.ID || ps[0].Selection.Mode != "edits" || ps[0].Selection.Instructions != "Keep the diff tiny." || ps[0].Hash != parked.Hash {
		t.Fatalf("after restart: %+v", ps)
	}
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID, "location": "worktree", "branch": "bad..name"}, nil); err == nil {
		t.Fatal("a bad branch started the plan")
	}
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID, "location": "sideways"}, nil); err == nil {
		t.Fatal("a bad location started the plan")
	}
	var res startInfo
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID, "location": "worktree", "branch": "feature/rename"}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Started || res.StaleBase || res.Notice != "" {
		t.Fatalf("start: %+v", res)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) && e.Session != s.ID
	}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ws, ".worktrees", "rename")
	if b, _ := os.ReadFile(filepath.Join(dir, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("fork greet.txt = %q (edits mode runs the edit without asking)", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
		t.Errorf("source greet.txt changed: %q", b)
	}
	var err error
	if err = p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID, "location": "here"}, nil); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Fatalf("second start: %v", err)
	}
	all := listParked(t, ctx, p.c, map[string]any{"all": true})
	if len(all) != 1 || !all[0].Started || all[0].Location != "worktree" || len(listParked(t, ctx, p.c, map[string]any{})) != 0 {
		t.Fatalf("after start: %+v", all)
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
	srcArt, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
	forkArt, _ := filepath.Glob(filepath.Join(state, "sessions", forks[0].ID, "work", "plans", "accepted-*.md"))
	if len(srcArt) != 1 || len(forkArt) != 1 || filepath.Base(srcArt[0]) != filepath.Base(parked.Artifact) {
		t.Fatalf("archives %v %v (parked %s)", srcArt, forkArt, parked.Artifact)
	}
	kickoffs := 0
	for _, id := range []string{s.ID, forks[0].ID} {
		kickoffs += countEvents(storedEvents(t, ctx, p.c, id), "user", `"Implement accepted plan"`)
		if _, err := st.GetRetryRecord(ctx, id); err == nil {
			t.Errorf("retry record left in %s", id)
		}
	}
	if kickoffs != 1 {
		t.Fatalf("%d kickoffs", kickoffs)
	}
	msgs, _ := st.Messages(ctx, forks[0].ID)
	sawInstr := false
	for _, m := range msgs {
		if m.Role == "user" && strings.Contains(m.Content, "Keep the diff tiny.") && strings.Contains(m.Content, "Rename the greeting") {
			sawInstr = true
		}
	}
	if !sawInstr {
		t.Error("the kickoff did not carry the parked instructions and plan")
	}
	// The fork carries the provenance.
	var fork struct {
		Session struct {
			AcceptedPlan *planRef `json:"accepted_plan"`
		} `json:"session"`
	}
	p.c.Call(ctx, "session/open", map[string]string{"session": forks[0].ID}, &fork)
	if fork.Session.AcceptedPlan == nil || fork.Session.AcceptedPlan.Hash != parked.Hash {
		t.Errorf("fork provenance %+v", fork.Session.AcceptedPlan)
	}
}

// TestParkStaleBase: when HEAD moved since approval, the start says so
// (result and a notice) and still runs Here.
func TestParkStaleBase(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, handoffScript(false)))
	p.c.OnAsk(func(json.RawMessage) any { return map[string]bool{"allow": true} })
	s, v := proposeAndWait(t, ctx, p, ws)
	var parked parkedInfo
	if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "other.txt"), []byte("x\n"), 0o644)
	git(t, ws, "add", "other.txt")
	git(t, ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "moved on")
	head := strings.TrimSpace(git(t, ws, "rev-parse", "HEAD"))
	var res startInfo
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Started || !res.StaleBase || !strings.Contains(res.Notice, "HEAD moved") || !strings.Contains(res.Notice, parked.Head[:12]) || !strings.Contains(res.Notice, head[:12]) {
		t.Fatalf("start after HEAD moved: %+v", res)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "notice" && strings.Contains(string(e.Data), "HEAD moved") }); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("greet.txt = %q", b)
	}
}

type outcomeInfo struct {
	Attempt string `json:"attempt"`
	Outcome string `json:"outcome"`
	Hash    string `json:"hash"`
}

func outcomes(t *testing.T, ctx context.Context, c *rpc.Client, sess string) []outcomeInfo {
	t.Helper()
	var os []outcomeInfo
	if err := c.Call(ctx, "approval/outcomes", map[string]string{"session": sess}, &os); err != nil {
		t.Fatal(err)
	}
	return os
}

// TestApprovalOutcomes: interrupting, leaving Plan, a timeout and the
// client going away never approve: each is recorded with its outcome, the
// card closes (or, after a shutdown, comes back under a new attempt) and
// nothing runs.
func TestApprovalOutcomes(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	propose := `{"text": ` + jsonString(planText) + `}`
	script := writeScript(t, "["+strings.Repeat(propose+",", 5)+propose+"]")
	p := startServe(t, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	nothingRan := func(phase string) {
		t.Helper()
		if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
			t.Fatalf("%s: workspace changed", phase)
		}
		if n := countEvents(storedEvents(t, ctx, p.c, s.ID), "handoff", ""); n != 0 {
			t.Fatalf("%s: %d handoff events", phase, n)
		}
		if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err == nil || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("%s: the closed card still accepts: %v", phase, err)
		}
	}
	// 1. session/interrupt with the card up.
	if err := p.c.Call(ctx, "session/interrupt", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "approval_closed" && strings.Contains(string(e.Data), `"interrupted"`)
	}); err != nil {
		t.Fatal(err)
	}
	nothingRan("interrupted")
	// 2. Leaving Plan with a card up.
	submit := func(text string) {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	submit("/plan again")
	waitTurnEnd(t, ctx, p.c, 2)
	v = getApproval(t, ctx, p.c, s.ID)
	submit("/plan off")
	nothingRan("left Plan")
	// 3. A timeout (set at initialize).
	if err := p.c.Call(ctx, "initialize", map[string]any{"approval_timeout": 0.2}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "initialize", map[string]any{"approval_timeout": -1}, nil); err == nil {
		t.Fatal("a negative approval_timeout was taken")
	}
	submit("/plan again")
	waitTurnEnd(t, ctx, p.c, 3)
	v = getApproval(t, ctx, p.c, s.ID)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "approval_closed" && strings.Contains(string(e.Data), `"timed_out"`)
	}); err != nil {
		t.Fatal(err)
	}
	nothingRan("timed out")
	var info struct {
		ProposalStatus string `json:"proposal_status"`
		Approval       string `json:"approval"`
		LastApproval   string `json:"last_approval"`
		Text           string `json:"text"`
	}
	p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &info)
	if info.ProposalStatus != "draft" || info.LastApproval != "timed_out" || !strings.Contains(info.Text, "last approval timed_out") {
		t.Fatalf("after timeout: %+v", info)
	}
	// 4. The client goes away with a card up: recorded as interrupted, and
	// the restarted server shows the proposal again under a new attempt.
	if err := p.c.Call(ctx, "initialize", map[string]any{"approval_timeout": 0}, nil); err != nil {
		t.Fatal(err)
	}
	submit("/plan again")
	waitTurnEnd(t, ctx, p.c, 4)
	v = getApproval(t, ctx, p.c, s.ID)
	last := v.Attempt
	p.stop()
	p = startServe(t, state, "--engine", "script", "--script", script)
	again := getApproval(t, ctx, p.c, s.ID)
	if !again.Pending || again.Attempt == last {
		t.Fatalf("after restart: %+v", again)
	}
	got := outcomes(t, ctx, p.c, s.ID)
	want := []string{"interrupted", "cancelled", "timed_out", "interrupted"}
	if len(got) != len(want) {
		t.Fatalf("outcomes %+v", got)
	}
	for i, o := range got {
		if o.Outcome != want[i] || o.Hash != hashOf("# Rename the greeting\n\n## Key Changes\n- Change hello to hi in greet.txt\n\n## Validation\n- cat greet.txt") {
			t.Errorf("outcome %d: %+v, want %s", i, o, want[i])
		}
	}
	if got[3].Attempt != last {
		t.Errorf("the shutdown outcome names %s, want %s", got[3].Attempt, last)
	}
	v.Attempt = last // the card of before the restart decides nothing
	nothingRan("restarted")
	if a := getApproval(t, ctx, p.c, s.ID); !a.Pending || a.Attempt != again.Attempt {
		t.Fatalf("the new card moved: %+v", a)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestParkedStartCrashAtEveryFailpoint: a parked plan started in a process
// killed at each handoff failpoint resumes after a restart exactly once:
// the plan is marked started, one archive, one kickoff, no record left.
func TestParkedStartCrashAtEveryFailpoint(t *testing.T) {
	for _, fp := range []string{"handoff.recorded", "handoff.context", "handoff.kickoff", "handoff.dispatched"} {
		t.Run(fp, func(t *testing.T) {
			ctx := ctxT(t)
			ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
			state := t.TempDir()
			script := writeScript(t, handoffScript(false))
			p := startServe(t, state, "--engine", "script", "--script", script)
			s, v := proposeAndWait(t, ctx, p, ws)
			v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
			var parked parkedInfo
			if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
				t.Fatal(err)
			}
			p.stop()
			p = startServeEnv(t, []string{handoff.FailpointEnv + "=" + fp}, state, "--engine", "script", "--script", script)
			_ = p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, nil)
			if !waitExit(p, 20*time.Second) {
				t.Fatalf("the process did not stop at %s", fp)
			}
			p2 := startServe(t, state, "--engine", "script", "--script", script)
			if len(listParked(t, ctx, p2.c, map[string]any{})) != 0 {
				t.Fatal("the crashed start left the plan parked: it could start twice")
			}
			if err := p2.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, nil); err == nil || !strings.Contains(err.Error(), "already started") {
				t.Fatalf("second start after the crash: %v", err)
			}
			if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool {
				return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`)
			}); err != nil {
				t.Fatal(err)
			}
			archives, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
			if n := countEvents(storedEvents(t, ctx, p2.c, s.ID), "user", `"Implement accepted plan"`); n != 1 || len(archives) != 1 {
				t.Fatalf("%d kickoffs, %d archives", n, len(archives))
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
				t.Errorf("greet.txt = %q", b)
			}
			if _, err := p2.opened(t).GetRetryRecord(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("retry record left behind: %v", err)
			}
		})
	}
}

// TestParkedStartTwiceAtOnce: two starts of one parked plan at the same
// moment start it once.
func TestParkedStartTwiceAtOnce(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, handoffScript(false)))
	s, v := proposeAndWait(t, ctx, p, ws)
	var parked parkedInfo
	if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, nil) }()
	}
	ok := 0
	for i := 0; i < 2; i++ {
		if err := <-errs; err == nil {
			ok++
		} else if !strings.Contains(err.Error(), "already started") && !strings.Contains(err.Error(), "busy") {
			t.Fatalf("the losing start: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d starts succeeded", ok)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) }); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(storedEvents(t, ctx, p.c, s.ID), "user", `"Implement accepted plan"`); n != 1 {
		t.Fatalf("%d kickoffs", n)
	}
}

// TestParkCrashAfterArchive: a process killed after the park's archive and
// before its commit leaves the card pending and nothing parked; after the
// restart the card comes back, and parking it again reuses the identical
// archive and parks it once.
func TestParkCrashAfterArchive(t *testing.T) {
	for _, fp := range handoff.ParkFailpoints {
		t.Run(fp, func(t *testing.T) {
			ctx := ctxT(t)
			ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
			state := t.TempDir()
			script := writeScript(t, handoffScript(false))
			p := startServeEnv(t, []string{handoff.FailpointEnv + "=" + fp}, state, "--engine", "script", "--script", script)
			s, v := proposeAndWait(t, ctx, p, ws)
			_ = p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
			if !waitExit(p, 20*time.Second) {
				t.Fatalf("the process did not stop at %s", fp)
			}
			p2 := startServe(t, state, "--engine", "script", "--script", script)
			if n := len(listParked(t, ctx, p2.c, map[string]any{})); n != 0 {
				t.Fatalf("%d parked plans after a crash before the commit", n)
			}
			v2 := getApproval(t, ctx, p2.c, s.ID)
			if !v2.Pending || v2.Attempt == v.Attempt {
				t.Fatalf("the card did not come back under a new attempt: %+v", v2)
			}
			var parked parkedInfo
			if err := p2.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v2.Attempt}, &parked); err != nil {
				t.Fatal(err)
			}
			archives, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
			if len(archives) != 1 || len(listParked(t, ctx, p2.c, map[string]any{})) != 1 {
				t.Fatalf("%d archives, parked %+v", len(archives), parked)
			}
		})
	}
}
