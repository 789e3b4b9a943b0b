package tracking

import (
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

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// fakeStore is the store as the tracking reaches it; its commits fail as
// a full disk would from the failFrom-th on (0: never).
type fakeStore struct {
	mu       sync.Mutex
	row      store.Tracking
	edited   []string
	commits  int
	failFrom int
}

func (f *fakeStore) fail() error {
	f.commits++
	if f.failFrom > 0 && f.commits >= f.failFrom {
		return fmt.Errorf("commit: %w", syscall.ENOSPC)
	}
	return nil
}

func (f *fakeStore) GetTracking(context.Context, string) (store.Tracking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.row, nil
}

func (f *fakeStore) PutTracking(_ context.Context, _ string, t store.Tracking) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	f.row = t
	return nil
}

func (f *fakeStore) AddEditedFile(_ context.Context, _, p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	f.edited = append(f.edited, p)
	return nil
}

func (f *fakeStore) failingFromNow() {
	f.mu.Lock()
	f.failFrom = f.commits + 1
	f.mu.Unlock()
}

func (f *fakeStore) storedStatus(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var p review.TrackedPlan
	if err := json.Unmarshal([]byte(f.row.Plan), &p); err != nil {
		t.Fatalf("stored plan %q: %v", f.row.Plan, err)
	}
	return p.Status
}

// fakeHost is the session as its tracking sees it.
type fakeHost struct {
	mu       sync.Mutex
	ws, work string
	events   []string // kind, or "error:<message>" / "notice:<message>"
	goalErr  error    // PauseGoal's commit fails with it
	goalWhy  []string
	stopped  int
	complete bool
	locked   bool // the aggregate's lock is held: no Host method may run
}

func (h *fakeHost) check() {
	if h.locked {
		panic("a Host method ran under the aggregate's lock")
	}
}

func (h *fakeHost) Emit(ev event.Data) {
	h.check()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e := ev.(type) {
	case event.Error:
		h.events = append(h.events, "error:"+e.Message)
	case event.Notice:
		h.events = append(h.events, "notice:"+e.Message)
	case event.Steps:
		h.events = append(h.events, "steps:"+e.Status)
	default:
		h.events = append(h.events, ev.Kind())
	}
}
func (h *fakeHost) Roots() agent.Roots           { h.check(); return agent.Roots{Workspace: h.ws, Work: h.work} }
func (h *fakeHost) Tool(name string) *agent.Tool { return nil }
func (h *fakeHost) Ask() agent.Asker             { return nil }
func (h *fakeHost) GoalComplete() bool           { h.check(); return h.complete }
func (h *fakeHost) PauseGoal(_ context.Context, why string) (func(), error) {
	h.check()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.goalWhy = append(h.goalWhy, why)
	h.events = append(h.events, "goal")
	return func() { h.mu.Lock(); h.stopped++; h.mu.Unlock() }, h.goalErr
}

func (h *fakeHost) eventList() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

const planBody = "# Tidy\n\n## Key Changes\n- Edit `src/a.go`\n\n## Steps\n1. Edit `src/a.go`\n2. Finish\n"

var planHash = proposal.HashBody(planBody)

// setup is a tracking over a fake store and host, its workspace a git
// checkout, the plan archived at work://plans/accepted-x.md.
func setup(t *testing.T) (*Tracking, *fakeHost, *fakeStore, string) {
	t.Helper()
	state, ws := t.TempDir(), t.TempDir()
	git(t, ws, "init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
	git(t, ws, "add", "-A")
	git(t, ws, "commit", "-q", "-m", "init")
	work := filepath.Join(state, "sessions", "s1", "work")
	os.MkdirAll(filepath.Join(work, "plans"), 0o700)
	if err := os.WriteFile(filepath.Join(work, "plans", "accepted-x.md"), handoff.ArtifactData(planBody), 0o600); err != nil {
		t.Fatal(err)
	}
	h, st := &fakeHost{ws: ws, work: work}, &fakeStore{}
	return New(Config{Session: "s1", State: state, Work: work, Store: st, Host: h}), h, st, state
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// start accepts the plan as an acceptance does: the base staged, the plan
// installed under the aggregate's lock, the row committed, the base named.
func start(t *testing.T, tk *Tracking, h *fakeHost, st *fakeStore) string {
	t.Helper()
	base, err := tk.StageBase(context.Background(), planHash, "work://plans/accepted-x.md", "Tidy", planBody)
	if err != nil {
		t.Fatal(err)
	}
	h.locked = true
	tk.StartLocked(review.Accepted{Title: "Tidy", Artifact: "work://plans/accepted-x.md", Hash: planHash, Body: planBody, Base: base})
	h.locked = false
	if err := st.PutTracking(context.Background(), "s1", store.Tracking(tk.Row())); err != nil {
		t.Fatal(err)
	}
	tk.BaseCommitted(base)
	return base
}

func code(err error) string {
	if r, ok := handoff.AsRefusal(err); ok {
		return r.Code
	}
	return ""
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		restarted  bool
		failCommit bool
		want       string // status in memory afterwards
		wantErr    bool
		wantStored string
	}{
		{name: "this process's own: running", want: review.ImplRunning, wantStored: review.ImplRunning},
		{name: "a restart pauses it, committed", restarted: true, want: review.ImplPaused, wantStored: review.ImplPaused},
		{name: "a restart whose commit fails", restarted: true, failCommit: true, want: review.ImplPaused, wantErr: true, wantStored: review.ImplRunning},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, h, st, _ := setup(t)
			start(t, tk, h, st)
			again := New(Config{Session: "s1", State: tk.cfg.State, Work: tk.cfg.Work, Store: st, Host: h})
			if c.failCommit {
				st.failingFromNow()
			}
			err := again.Load(ctx, c.restarted)
			if (err != nil) != c.wantErr {
				t.Fatalf("load: %v", err)
			}
			if p := again.Plan(); p == nil || p.Status != c.want || p.Base == "" {
				t.Fatalf("loaded %+v", p)
			}
			if got := st.storedStatus(t); got != c.wantStored {
				t.Fatalf("stored %s, want %s", got, c.wantStored)
			}
		})
	}
}

// TestStartUndoNeverCallTheHost: the two methods run under the
// aggregate's lock (the fake host panics if called under it).
func TestStartUndoNeverCallTheHost(t *testing.T) {
	tk, h, _, _ := setup(t)
	h.locked = true
	first, prev := tk.StartLocked(review.Accepted{Title: "One", Body: planBody})
	second, _ := tk.StartLocked(review.Accepted{Title: "Two", Body: planBody})
	tk.UndoLocked(first, prev) // a concurrent start that won keeps its own
	if p := tk.Plan(); p == nil || p.Title != "Two" {
		t.Fatalf("undo took the winner's plan: %+v", p)
	}
	tk.UndoLocked(second, first)
	h.locked = false
	if p := tk.Plan(); p == nil || p.Title != "One" || p.Status != review.ImplRunning {
		t.Fatalf("undo: %+v", p)
	}
	if evs := h.eventList(); len(evs) != 0 {
		t.Fatalf("announced under the lock: %q", evs)
	}
}

func TestPauseForScope(t *testing.T) {
	for _, c := range []struct {
		name               string
		implFails, goalErr bool
		want               []string // events in order
		wantStored         string
	}{
		{name: "both saved", want: []string{"steps:paused", "goal", "notice:Implementation paused: docs/x.md"}, wantStored: review.ImplPaused},
		{name: "the implementation's commit fails", implFails: true,
			want:       []string{"goal", "error:The implementation was stopped (docs/x.md), but its pause could not be saved: commit: no space left on device"},
			wantStored: review.ImplRunning},
		{name: "the Goal's commit fails", goalErr: true,
			want:       []string{"steps:paused", "goal", "error:The implementation was stopped (docs/x.md), but its pause could not be saved: goal: no space left on device"},
			wantStored: review.ImplPaused},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, h, st, _ := setup(t)
			start(t, tk, h, st)
			h.events = nil
			if c.implFails {
				st.failingFromNow()
			}
			if c.goalErr {
				h.goalErr = fmt.Errorf("goal: %w", syscall.ENOSPC)
			}
			tk.PauseForScope("docs/x.md")
			if got := strings.Join(h.eventList(), "|"); got != strings.Join(c.want, "|") {
				t.Fatalf("events\n %s\nwant\n %s", got, strings.Join(c.want, "|"))
			}
			if h.stopped != 1 || len(h.goalWhy) != 1 || h.goalWhy[0] != "outside the declared scope: docs/x.md" {
				t.Fatalf("the turn stopped %d times, the Goal paused for %q", h.stopped, h.goalWhy)
			}
			if p := tk.Plan(); p.Status != review.ImplPaused {
				t.Fatal("not paused in memory: the safe side is paused")
			}
			if got := st.storedStatus(t); got != c.wantStored {
				t.Fatalf("stored %s, want %s", got, c.wantStored)
			}
		})
	}
}

func TestResume(t *testing.T) {
	ctx := context.Background()
	t.Run("nothing paused", func(t *testing.T) {
		tk, h, st, _ := setup(t)
		if _, _, err := tk.Resume(ctx); code(err) != CodeNothingToRetry {
			t.Fatalf("nothing tracked: %v", err)
		}
		start(t, tk, h, st)
		if _, _, err := tk.Resume(ctx); code(err) != CodeNothingToRetry {
			t.Fatalf("running: %v", err)
		}
	})
	t.Run("its commit fails: nothing resumed", func(t *testing.T) {
		tk, h, st, _ := setup(t)
		start(t, tk, h, st)
		tk.PauseForScope("x")
		h.events = nil
		st.failingFromNow()
		prompt, _, err := tk.Resume(ctx)
		if err == nil || code(err) != "" || prompt != "" || !strings.Contains(err.Error(), "could not resume the implementation") {
			t.Fatalf("resume: %q %v", prompt, err)
		}
		if tk.Plan().Status != review.ImplPaused || len(h.eventList()) != 0 {
			t.Fatalf("resumed in memory or announced: %q", h.eventList())
		}
	})
	t.Run("resumed", func(t *testing.T) {
		tk, h, st, _ := setup(t)
		start(t, tk, h, st)
		tk.PauseForScope("x")
		h.events = nil
		prompt, _, err := tk.Resume(ctx)
		if err != nil || !strings.HasPrefix(prompt, "Resume implementing the accepted plan.") {
			t.Fatalf("resume: %q %v", prompt, err)
		}
		if got := strings.Join(h.eventList(), "|"); got != "steps:running" || st.storedStatus(t) != review.ImplRunning {
			t.Fatalf("events %s", got)
		}
	})
}

func TestCoded(t *testing.T) {
	tk, _, _, _ := setup(t)
	_, noReport := tk.Report(context.Background())
	_, noVersion := tk.DiffVersions(planHash, 7, 0)
	other := errors.New("disk on fire")
	for _, c := range []struct {
		err  error
		code string
	}{
		{noReport, CodeNoReport},
		{noVersion, CodeNoProposal},
		{other, ""},
		{nil, ""},
	} {
		got := Coded(c.err)
		if code(got) != c.code {
			t.Errorf("%v: code %q, want %q", c.err, code(got), c.code)
		}
		if c.err != nil && got.Error() != c.err.Error() {
			t.Errorf("the message changed: %q", got.Error())
		}
		if c.err == nil && got != nil {
			t.Errorf("nil became %v", got)
		}
	}
	if _, err := CleanScope([]string{"src", "../etc"}); code(err) != CodeInvalidScope || !strings.Contains(err.Error(), `"../etc" is not a path inside the workspace`) {
		t.Errorf("clean scope: %v", err)
	}
	if got, err := CleanScope([]string{"./src/", "docs"}); err != nil || strings.Join(got, ",") != "src,docs" {
		t.Errorf("clean scope: %q %v", got, err)
	}
}

// block puts a file where the directory dir is expected: every write
// under it fails, as root too.
func block(t *testing.T, dir string) {
	t.Helper()
	os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBases(t *testing.T) {
	ctx := context.Background()
	t.Run("a base that cannot be staged refuses the start", func(t *testing.T) {
		tk, _, _, state := setup(t)
		block(t, ReviewDir(state, "s1"))
		_, err := tk.StageBase(ctx, planHash, "work://plans/accepted-x.md", "Tidy", planBody)
		if code(err) != CodeBaseFailed || !strings.Contains(err.Error(), "nothing was started") {
			t.Fatalf("stage: %v", err)
		}
	})
	t.Run("a pointer that cannot be written is told", func(t *testing.T) {
		tk, h, st, state := setup(t)
		os.MkdirAll(filepath.Join(ReviewDir(state, "s1"), "current", "x"), 0o700)
		base := start(t, tk, h, st)
		evs := h.eventList()
		if len(evs) != 1 || !strings.HasPrefix(evs[0], "error:Could not save the pointer to the current implementation's report") {
			t.Fatalf("events %q", evs)
		}
		if tk.Plan().Base != base {
			t.Fatal("the session's own base was lost with the pointer")
		}
	})
	t.Run("named for offline readers", func(t *testing.T) {
		tk, h, st, state := setup(t)
		base := start(t, tk, h, st)
		b, err := os.ReadFile(filepath.Join(ReviewDir(state, "s1"), "current"))
		if err != nil || strings.TrimSpace(string(b)) != base || len(h.eventList()) != 0 {
			t.Fatalf("current %q %v, events %q", b, err, h.eventList())
		}
	})
}

func TestForFork(t *testing.T) {
	ctx := context.Background()
	t.Run("no plan: the row as it is", func(t *testing.T) {
		tk, _, _, _ := setup(t)
		f, err := tk.ForFork(ctx, "s2", t.TempDir(), "plans/accepted-x.md", planHash)
		if err != nil || f.Base != "" || f.Row.Plan != "" || f.Row.Todos != "[]" {
			t.Fatalf("fork %+v %v", f, err)
		}
	})
	t.Run("the fork's own base, in its review directory", func(t *testing.T) {
		tk, h, st, state := setup(t)
		own := start(t, tk, h, st)
		dir := t.TempDir()
		// The fork session's directory comes with the fork session (before
		// the hand-over): staging never creates it.
		if _, err := tk.ForFork(ctx, "s2", dir, "plans/accepted-x.md", planHash); err == nil {
			t.Fatal("a base staged for a fork session that has no directory")
		}
		if _, err := os.Lstat(filepath.Join(state, "sessions", "s2")); !os.IsNotExist(err) {
			t.Fatalf("staging created the fork session's directory: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(state, "sessions", "s2"), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := tk.ForFork(ctx, "s2", dir, "plans/accepted-x.md", planHash)
		if err != nil || f.Base == "" || f.Base == own {
			t.Fatalf("fork %+v %v", f, err)
		}
		var p review.TrackedPlan
		json.Unmarshal([]byte(f.Row.Plan), &p)
		if p.Base != f.Base || p.Title != "Tidy" {
			t.Fatalf("the fork's plan %+v", p)
		}
		data, err := os.ReadFile(filepath.Join(ReviewDir(state, "s2"), f.Base, "base.json"))
		if err != nil || !strings.Contains(string(data), dir) {
			t.Fatalf("the fork's base: %s %v", data, err)
		}
		sc, _ := os.ReadFile(filepath.Join(ReviewDir(state, "s2"), f.Base, "scope.json"))
		if !strings.Contains(string(sc), "src/a.go") {
			t.Fatalf("the card's scope did not travel: %s", sc)
		}
		if tk.Plan().Base != own {
			t.Fatal("this session's plan was changed by the fork's")
		}
		tk.ForkCommitted("s2", f)
		cur, _ := os.ReadFile(filepath.Join(ReviewDir(state, "s2"), "current"))
		if strings.TrimSpace(string(cur)) != f.Base {
			t.Fatalf("the fork's pointer %q", cur)
		}
	})
	t.Run("a base that cannot be staged fails the hand-over", func(t *testing.T) {
		tk, h, st, state := setup(t)
		start(t, tk, h, st)
		block(t, ReviewDir(state, "s2"))
		f, err := tk.ForFork(ctx, "s2", t.TempDir(), "plans/accepted-x.md", planHash)
		if err == nil || f.Row.Plan != "" || !strings.Contains(err.Error(), "could not stage the fork's implementation base") {
			t.Fatalf("fork %+v %v", f, err)
		}
	})
	t.Run("an artifact that does not match fails it", func(t *testing.T) {
		tk, h, st, _ := setup(t)
		start(t, tk, h, st)
		if _, err := tk.ForFork(ctx, "s2", t.TempDir(), "plans/accepted-x.md", proposal.HashBody("other")); err == nil {
			t.Fatal("a fork from an artifact that is not the plan")
		}
	})
}

func TestRecordEdit(t *testing.T) {
	tk, h, st, _ := setup(t)
	call := func(path string) agent.ToolCall {
		return agent.ToolCall{ID: "c", Name: "write_file", Arguments: json.RawMessage(`{"path":"` + path + `","content":"x"}`)}
	}
	tk.RecordEdit(call("src/a.go"))
	if len(st.edited) != 1 || st.edited[0] != "src/a.go" || len(h.eventList()) != 0 {
		t.Fatalf("edited %q, events %q", st.edited, h.eventList())
	}
	st.failingFromNow()
	tk.RecordEdit(call("src/b.go"))
	evs := h.eventList()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "error:Could not save that src/b.go was edited (a Worktree fork would not carry it): commit: no space left on device") {
		t.Fatalf("events %q", evs)
	}
}

// TestReportsThroughTheHost: the tracker's port reaches the session's
// events; a report at the end that cannot be built (its plan archive
// changed outside planbridge) is an error event and never a report, and
// is tried again at the next end. (A report that cannot be written is
// review's TestRecordWritesThatFailAreTold, with a full disk.)
func TestReportsThroughTheHost(t *testing.T) {
	ctx := context.Background()
	tk, h, st, _ := setup(t)
	start(t, tk, h, st)
	tk.ReportIfEnded(ctx) // not ended: nothing
	if evs := h.eventList(); len(evs) != 0 {
		t.Fatalf("events %q", evs)
	}
	h.complete = true // the implementing Goal is complete: the implementation ended
	archive := filepath.Join(tk.cfg.Work, "plans", "accepted-x.md")
	os.WriteFile(archive, []byte("# Changed\n"), 0o600)
	tk.ReportIfEnded(ctx)
	evs := h.eventList()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "error:Could not save the implementation report (it could not be built): work://plans/accepted-x.md does not match") {
		t.Fatalf("events %q", evs)
	}
	os.WriteFile(archive, handoff.ArtifactData(planBody), 0o600)
	h.events = nil
	tk.ReportIfEnded(ctx) // tried again
	if evs := h.eventList(); len(evs) != 1 || evs[0] != "report" || tk.StoredReport() == nil {
		t.Fatalf("events %q", evs)
	}
}

func TestStoredPlan(t *testing.T) {
	ctx := context.Background()
	running := `{"title":"Tidy","hash":"` + planHash + `","status":"running","steps":[{"id":"s1","text":"One","status":"pending"}]}`
	for _, c := range []struct {
		name, plan string
		want       string // the title, "" nil
	}{
		{"none", "", ""},
		{"corrupt", "{", ""},
		{"running: named as opening the session would", running, "Tidy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{row: store.Tracking{Plan: c.plan}}
			got := StoredPlan(ctx, st, "s1")
			if (got == nil) != (c.want == "") || got != nil && (got.Title != c.want || got.Hash != planHash || got.Trailer == "") {
				t.Fatalf("stored plan %+v", got)
			}
		})
	}
}
