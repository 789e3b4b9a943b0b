package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// world is what survives a "crash" of the fake session: the committed
// record and counts of every effect that must happen exactly once.
type world struct {
	record   string // committed retry record ("" = none)
	segments int    // Fresh/Summary segments installed
	segment  int64  // the session's current segment
	summary  int    // completed summary requests
	kickoffs int    // kickoff requests sent
	conts    int    // continuations sent
	goals    int    // Goals constructed
	forks    int    // fork sessions created
	adds     int    // worktrees added
	complete bool   // the worktree is complete
	handed   int    // hand-overs
	started  int    // fork handoffs started
	forkOwns bool   // the fork holds a record not yet started
	material string // the installed segment's first message
}

type crash struct{ at string }

// fakeEnv is the session side of the pipeline and of the fork step, over a
// world; it "crashes" (panics) at crashAt and fails the commit named in
// failOp with ENOSPC.
type fakeEnv struct {
	w       *world
	crashAt string
	failOp  string
	skills  bool
	// cancel, when set, is called as the summary stream completes (an
	// interrupt arriving with the last chunk); calls logs the port calls.
	cancel context.CancelFunc
	calls  []string
	// summary, when set, is what the summary request returns.
	summary *string
}

func (f *fakeEnv) commit(op string, rec *Record) error {
	if f.failOp == op {
		return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
	}
	if rec != nil {
		f.w.record = rec.Marshal()
	}
	return nil
}

func (f *fakeEnv) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}
func (f *fakeEnv) Save(ctx context.Context, rec *Record) error {
	f.calls = append(f.calls, "save")
	if err := ctx.Err(); err != nil {
		return err // like the store: a cancelled context commits nothing
	}
	return f.commit("record", rec)
}
func (f *fakeEnv) PlanBody(ctx context.Context, rec *Record) (string, error) {
	return "# Plan\n- step\n", nil
}
func (f *fakeEnv) History(ctx context.Context) (string, error) { return "[user]\nhi\n", nil }
func (f *fakeEnv) Summarize(ctx context.Context, system, input string) (string, error) {
	f.w.summary++
	f.calls = append(f.calls, "summarize")
	if f.cancel != nil {
		f.cancel()
	}
	if f.summary != nil {
		return *f.summary, nil
	}
	return "## Scope\nx\n", nil
}
func (f *fakeEnv) Summarized(ctx context.Context, rec *Record) {
	f.calls = append(f.calls, "summarized")
}
func (f *fakeEnv) InstallSegment(ctx context.Context, rec *Record, material string) error {
	if rec.Segment == 0 {
		rec.Segment = f.w.segment + 1
	}
	if err := f.commit("segment", rec); err != nil {
		return err
	}
	if f.w.segment != rec.Segment {
		f.w.segment = rec.Segment
		f.w.segments++
		f.w.material = material
	}
	return nil
}
func (f *fakeEnv) Workspace(ctx context.Context) string { return "/nonexistent/ws" }
func (f *fakeEnv) Fork(ctx context.Context, rec *Record) error {
	return ForkStep(ctx, f, fakeGit{f}, rec)
}
func (f *fakeEnv) StartGoal(ctx context.Context, rec *Record) error {
	if err := f.commit("goal", nil); err != nil {
		return err
	}
	f.w.goals++
	f.w.record = ""
	f.Failpoint("handoff.goal")
	return nil
}
func (f *fakeEnv) Kickoff(ctx context.Context, rec *Record, prompt, display string) error {
	if err := f.commit("dispatch", rec.Dispatched()); err != nil {
		return err
	}
	rec.Step = StepDispatched
	f.Failpoint("handoff.dispatched")
	f.w.kickoffs++
	if err := f.commit("turn", nil); err != nil {
		return err
	}
	f.w.record = ""
	return nil
}
func (f *fakeEnv) Continue(ctx context.Context, rec *Record) error {
	f.w.conts++
	if err := f.commit("turn", nil); err != nil {
		return err
	}
	f.w.record = ""
	return nil
}

// ForkPort.
func (f *fakeEnv) ForkPoint() int64          { return 7 }
func (f *fakeEnv) RepoRoot() (string, error) { return "/repo", nil }
func (f *fakeEnv) CreateForkSession(ctx context.Context, rec *Record) error {
	r := *rec
	r.Fork.Session = "s-fork"
	if err := f.commit("fork.session", &r); err != nil {
		return err
	}
	rec.Fork.Session = r.Fork.Session
	f.w.forks++
	return nil
}
func (f *fakeEnv) RestoreEdits(ctx context.Context, root, dir string) error { return nil }
func (f *fakeEnv) HandOver(ctx context.Context, rec *Record) error {
	if err := f.commit("handover", nil); err != nil {
		return err
	}
	f.w.handed++
	f.w.record = "" // the fork holds its own now
	f.w.forkOwns = true
	return nil
}
func (f *fakeEnv) StartFork(ctx context.Context, rec *Record) error {
	f.w.started++
	f.w.forkOwns = false
	return nil
}

type fakeGit struct{ f *fakeEnv }

func (g fakeGit) Head(root string) (string, error) { return "abc", nil }
func (g fakeGit) Verify(root, dir, branch string) error {
	if !g.f.w.complete {
		return errors.New("incomplete")
	}
	return nil
}
func (g fakeGit) Discard(root, dir, branch, base, owner string) error {
	if owner == "" || base != "abc" {
		return errors.New("not ours")
	}
	return nil
}
func (g fakeGit) Add(ctx context.Context, root, dir, branch, base, owner string) error {
	g.f.w.adds++
	g.f.w.complete = true
	return nil
}

func newRecord(loc Location, cx Context, ex Execution) *Record {
	return &Record{Step: StepRecorded, Artifact: Artifact{Path: "plans/a.md", Hash: "h"},
		Selection: Selection{Location: loc, Context: cx, Execution: ex, Mode: "ask", Branch: "feature/x"}}
}

// runUntil runs the pipeline from the committed record, reporting the
// failpoint it crashed at ("" if none).
func runUntil(t *testing.T, env *fakeEnv, rec *Record) (crashed string, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crash)
			if !ok {
				panic(r)
			}
			crashed = c.at
		}
	}()
	return "", Run(context.Background(), env, rec)
}

// TestStepsCrashAtEveryFailpoint: for every variant and every failpoint,
// crash there, "restart" from the committed record, run again: every
// effect happened exactly once and no record is left.
func TestStepsCrashAtEveryFailpoint(t *testing.T) {
	variants := []struct {
		loc Location
		cx  Context
		ex  Execution
	}{
		{Here, Current, Direct}, {Here, Fresh, Direct}, {Here, Summary, Direct},
		{Here, Current, Goal}, {Worktree, Current, Direct},
	}
	points := append(append([]string{}, Failpoints...), ForkFailpoints...)
	for _, v := range variants {
		for _, fp := range points {
			t.Run(fmt.Sprintf("%s-%s-%s/%s", v.loc, v.cx, v.ex, fp), func(t *testing.T) {
				w := &world{}
				rec := newRecord(v.loc, v.cx, v.ex)
				w.record = rec.Marshal() // acceptance committed it
				crashed, err := runUntil(t, &fakeEnv{w: w, crashAt: fp}, rec)
				if err != nil {
					t.Fatalf("first run: %v", err)
				}
				if crashed != "" && w.record != "" {
					// Restart: the pipeline resumes from what was committed.
					back, err := UnmarshalRecord(w.record)
					if err != nil {
						t.Fatal(err)
					}
					if c, err := runUntil(t, &fakeEnv{w: w}, back); err != nil || c != "" {
						t.Fatalf("recovery: %v %q", err, c)
					}
				}
				if crashed != "" && w.forkOwns {
					// The source's recovery goes to the fork that owns it.
					w.started++
					w.forkOwns = false
				}
				if w.record != "" || w.forkOwns {
					t.Fatalf("record left: %s (fork owns one: %v)", w.record, w.forkOwns)
				}
				want := func(name string, got, n int) {
					if got != n {
						t.Errorf("%s %d times, want %d", name, got, n)
					}
				}
				summary := map[bool]int{true: 1}[v.cx == Summary]
				segment := map[bool]int{true: 1}[v.cx != Current]
				if v.loc == Worktree {
					want("fork session", w.forks, 1)
					want("worktree", w.adds, 1)
					want("hand-over", w.handed, 1)
					want("fork start", w.started, 1)
					return
				}
				want("summary", w.summary, summary)
				want("segment", w.segments, segment)
				if v.ex == Goal {
					want("goal", w.goals, 1)
					want("kickoff", w.kickoffs, 0)
					return
				}
				if w.kickoffs > 1 || w.kickoffs+w.conts != 1 {
					t.Errorf("kickoffs %d continuations %d: the kickoff must be sent at most once, the implementation run once", w.kickoffs, w.conts)
				}
			})
		}
	}
}

// TestStepsFailingCommit: a commit that fails (ENOSPC) fails the step with
// that error; the committed record is never lost, so recovery (the disk
// freed) completes it exactly once.
func TestStepsFailingCommit(t *testing.T) {
	for _, c := range []struct {
		op  string
		rec *Record
	}{
		{"record", newRecord(Here, Current, Direct)},
		{"record", newRecord(Here, Summary, Direct)},
		{"segment", newRecord(Here, Fresh, Direct)},
		{"dispatch", newRecord(Here, Current, Direct)},
		{"turn", newRecord(Here, Current, Direct)},
		{"goal", newRecord(Here, Current, Goal)},
		{"fork.session", newRecord(Worktree, Current, Direct)},
		{"handover", newRecord(Worktree, Current, Direct)},
	} {
		t.Run(c.op+"/"+string(c.rec.Selection.Location)+"-"+string(c.rec.Selection.Context)+"-"+string(c.rec.Selection.Execution), func(t *testing.T) {
			w := &world{record: c.rec.Marshal()}
			_, err := runUntil(t, &fakeEnv{w: w, failOp: c.op}, c.rec)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("step with a failing %s commit: %v", c.op, err)
			}
			if w.record == "" {
				t.Fatal("the committed record was lost")
			}
			back, err := UnmarshalRecord(w.record)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runUntil(t, &fakeEnv{w: w}, back); err != nil {
				t.Fatal(err)
			}
			if w.record != "" || w.kickoffs > 1 || w.forks > 1 || w.goals > 1 || w.adds > 1 {
				t.Fatalf("after recovery: %+v", *w)
			}
		})
	}
}

// TestForkDirIsUnderWorktrees keeps the fork's directory rule.
func TestForkDirIsUnderWorktrees(t *testing.T) {
	if got := ForkDir("/r", "feature/x"); got != filepath.Join("/r", ".worktrees", "x") {
		t.Fatal(got)
	}
	_ = os.Getenv
}

// TestSummaryCommittedFirst: a completed summary is committed before
// anything else happens, even when the handoff is interrupted as its
// stream ends, and the person hears of it only after that commit; so a
// restart never requests it again.
func TestSummaryCommittedFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &world{}
	rec := newRecord(Here, Summary, Direct)
	w.record = rec.Marshal()
	env := &fakeEnv{w: w, cancel: cancel}
	_ = Run(ctx, env, rec) // the interrupt may stop what follows
	back, err := UnmarshalRecord(w.record)
	if err != nil {
		t.Fatal(err)
	}
	if back.Summary == "" {
		t.Fatalf("the completed summary was not committed (calls %v)", env.calls)
	}
	if len(env.calls) < 3 || env.calls[0] != "summarize" || env.calls[1] != "save" || env.calls[2] != "summarized" {
		t.Fatalf("calls %v: want summarize, save, summarized first", env.calls)
	}
	if _, err := runUntil(t, &fakeEnv{w: w}, back); err != nil {
		t.Fatal(err)
	}
	if w.summary != 1 {
		t.Fatalf("the summary was requested %d times", w.summary)
	}
}

// TestBlankSummary: a summary that comes back blank fails the step with a
// reason in the record, caches nothing and installs no segment; the retry
// requests it again and goes on.
func TestBlankSummary(t *testing.T) {
	for _, blank := range []string{"", " \n\t\n"} {
		w := &world{}
		rec := newRecord(Here, Summary, Direct)
		w.record = rec.Marshal()
		f := &fakeEnv{w: w, summary: &blank}
		err := Run(context.Background(), f, rec)
		if err == nil || err.Error() != "summary request failed: the summary came back empty" {
			t.Fatalf("%q: %v", blank, err)
		}
		back, err := UnmarshalRecord(w.record)
		if err != nil || back.Summary != "" || back.Step != StepRecorded || !strings.Contains(back.Reason, "came back empty") || w.segments != 0 {
			t.Fatalf("%q: record %+v (%v), %d segments", blank, back, err, w.segments)
		}
		if err := Run(context.Background(), &fakeEnv{w: w}, back); err != nil || w.summary != 2 || w.segments != 1 || w.kickoffs != 1 {
			t.Fatalf("%q: retry: %v, %d summaries, %d segments, %d kickoffs", blank, err, w.summary, w.segments, w.kickoffs)
		}
	}
}

// TestSegmentMaterial: a Fresh context starts with the workspace's setup
// material (FreshMaterial of the port's workspace, HEAD included), a
// Summary context with the committed summary.
func TestSegmentMaterial(t *testing.T) {
	for _, c := range []struct {
		ctx  Context
		want string
	}{
		{Fresh, FreshSetup("/nonexistent/ws", "not a git repository")},
		{Summary, SummarySetup("## Scope\nx\n")},
	} {
		w := &world{}
		rec := &Record{Step: StepRecorded, Selection: Selection{Location: Here, Context: c.ctx}, Artifact: Artifact{Path: "plans/a.md", Hash: "ab"}}
		if err := Run(context.Background(), &fakeEnv{w: w, skills: true}, rec); err != nil {
			t.Fatalf("%s: %v", c.ctx, err)
		}
		if w.segments != 1 || w.material != c.want {
			t.Errorf("%s: %d segments, material %q, want %q", c.ctx, w.segments, w.material, c.want)
		}
	}
}
