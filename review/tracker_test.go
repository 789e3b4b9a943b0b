package review

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"planbridge/handoff"
	"planbridge/proposal"
)

// fakePort is the session as a [Tracker] sees it, recording what it is
// told in order.
type fakePort struct {
	mu        sync.Mutex
	t         *Tracker
	ws        string
	fail      error // CommitTracking fails with it
	commits   []Row
	events    []string // "todos", "steps:<status>", "scope", "report", "notice"
	scopes    []Scope
	notices   []string
	pauses    []string
	artifacts map[string]string // rel -> body (hash checked)
	ask       Asker
	asked     []string
	unsaved   []string // "what: err"
}

func (f *fakePort) CommitTracking(_ context.Context, row Row) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.commits = append(f.commits, row)
	return nil
}
func (f *fakePort) record(ev string)        { f.mu.Lock(); f.events = append(f.events, ev); f.mu.Unlock() }
func (f *fakePort) TodosChanged([]TodoItem) { f.record("todos") }
func (f *fakePort) StepsChanged(p *TrackedPlan) {
	f.record("steps:" + p.Status)
}
func (f *fakePort) ScopeChanged(sc Scope) {
	f.record("scope")
	f.mu.Lock()
	f.scopes = append(f.scopes, sc)
	f.mu.Unlock()
}
func (f *fakePort) ReportBuilt(Report) { f.record("report") }
func (f *fakePort) Notice(msg string) {
	f.record("notice")
	f.mu.Lock()
	f.notices = append(f.notices, msg)
	f.mu.Unlock()
}
func (f *fakePort) Unsaved(what string, err error) {
	f.record("unsaved")
	f.mu.Lock()
	f.unsaved = append(f.unsaved, what+": "+err.Error())
	f.mu.Unlock()
}
func (f *fakePort) Workspace() string { return f.ws }
func (f *fakePort) ReadArtifact(rel, hash string) (string, error) {
	body, ok := f.artifacts[rel]
	if !ok || proposal.HashBody(body) != hash {
		return "", errors.New("no such artifact")
	}
	return body, nil
}
func (f *fakePort) Asker() Asker {
	if f.ask == nil {
		return nil
	}
	return func(ctx context.Context, c Call, q string) (bool, error) {
		f.mu.Lock()
		f.asked = append(f.asked, q)
		f.mu.Unlock()
		return f.ask(ctx, c, q)
	}
}
func (f *fakePort) Pause(reason string) {
	f.mu.Lock()
	f.pauses = append(f.pauses, reason)
	f.mu.Unlock()
	f.t.SetStatus(context.Background(), ImplPaused, "outside the declared scope: "+reason)
}

func (f *fakePort) eventList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// newTracker is a Tracker over a fake port, with its directories under
// a fresh state directory; ws is the workspace ("" a fresh directory).
func newTracker(t *testing.T, ws string) (*Tracker, *fakePort) {
	t.Helper()
	state := t.TempDir()
	if ws == "" {
		ws = t.TempDir()
	}
	work := filepath.Join(state, "sessions", "s1", "work")
	if err := os.MkdirAll(filepath.Join(work, "plans"), 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fakePort{ws: ws, artifacts: map[string]string{}}
	tr := NewTracker(Config{Session: "s1", Dir: filepath.Join(state, "sessions", "s1", "review"), State: state,
		Work: work, Plans: "plans", Port: f})
	f.t = tr
	return tr, f
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// repo is a checkout with files committed.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for p, c := range files {
		writeFile(t, filepath.Join(dir, p), c)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

const planBody = "# Greet\n\n## Key Changes\n- Add `a.txt` with a greeting\n- Update `b/c.txt`\n\n## Validation\n- `true`\n"

// accept tracks planBody as accepted, its base staged over ws with scope.
func accept(t *testing.T, tr *Tracker, f *fakePort, scope []string) string {
	t.Helper()
	hash := proposal.HashBody(planBody)
	f.artifacts["plans/accepted-x.md"] = planBody
	id, err := StageBase(context.Background(), tr.cfg.Dir, f.ws, "Greet", hash, "work://plans/accepted-x.md", scope)
	if err != nil {
		t.Fatal(err)
	}
	tr.Begin(Accepted{Title: "Greet", Artifact: "work://plans/accepted-x.md", Hash: hash, Body: planBody, Base: id})
	if err := BaseCommitted(tr.cfg.Dir, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestTrackerTodos(t *testing.T) {
	boom := errors.New("disk full")
	cases := []struct {
		name    string
		in      []TodoItem
		fail    error
		wantErr bool
		want    int // items after
	}{
		{"valid list committed and published", []TodoItem{{Content: "a", Status: TodoInProgress}, {Content: "b"}}, nil, false, 2},
		{"rejected list changes nothing", []TodoItem{{Content: "a", Status: TodoInProgress}, {Content: "b", Status: TodoInProgress}}, nil, true, 1},
		{"failed commit keeps the previous list", []TodoItem{{Content: "x"}, {Content: "y"}}, boom, true, 1},
		{"empty list clears", nil, nil, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, f := newTracker(t, "")
			ctx := context.Background()
			if _, err := tr.WriteTodos(ctx, []TodoItem{{Content: "first"}}); err != nil {
				t.Fatal(err)
			}
			f.fail = c.fail
			_, err := tr.WriteTodos(ctx, c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if c.fail != nil && !errors.Is(err, c.fail) {
				t.Fatalf("err %v, want the commit's", err)
			}
			if got := tr.Todos(); len(got) != c.want {
				t.Fatalf("todos %+v", got)
			}
			wantEvents := []string{"todos"}
			if !c.wantErr {
				wantEvents = append(wantEvents, "todos")
			}
			if ev := f.eventList(); !slices.Equal(ev, wantEvents) {
				t.Fatalf("events %v, want %v", ev, wantEvents)
			}
			if c.want == 0 && tr.Row().Todos != "[]" {
				t.Fatalf("cleared row %q", tr.Row().Todos)
			}
			if len(f.commits) != len(wantEvents) {
				t.Fatalf("%d commits for %d publications", len(f.commits), len(wantEvents))
			}
		})
	}
}

func TestTrackerSteps(t *testing.T) {
	body := "# P\n\n## Steps\n1. Add the flag\n2. Print the name\n"
	cases := []struct {
		name, step, status string
		noPlan             bool
		pre                map[string]string // step -> status before
		fail               error
		wantErr            string
		wantImpl           string
	}{
		{name: "no plan", noPlan: true, step: "s1", status: StepCompleted, wantErr: "no accepted plan"},
		{name: "by id", step: "s1", status: StepInProgress, wantImpl: ImplRunning},
		{name: "by number", step: "2", status: StepBlocked, wantImpl: ImplRunning},
		{name: "unknown step", step: "s9", status: StepCompleted, wantErr: `no step "s9"`},
		{name: "unknown status", step: "s1", status: "done", wantErr: `status "done"`},
		{name: "last step done ends it", step: "s2", status: StepCompleted, pre: map[string]string{"s1": StepSkipped}, wantImpl: ImplDone},
		{name: "failed commit is reported, nothing published", step: "s1", status: StepCompleted, fail: errors.New("disk full"), wantErr: "disk full"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, f := newTracker(t, "")
			ctx := context.Background()
			if !c.noPlan {
				tr.Begin(Accepted{Title: "P", Artifact: "work://plans/accepted-x.md", Body: body})
				for id, st := range c.pre {
					if _, err := tr.UpdateStep(ctx, id, st); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := len(f.eventList())
			f.fail = c.fail
			p, err := tr.UpdateStep(ctx, c.step, c.status)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				if n := len(f.eventList()); n != before {
					t.Fatalf("published after a failure: %v", f.eventList())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != c.wantImpl || tr.Plan().Status != c.wantImpl {
				t.Fatalf("implementation %s, want %s", p.Status, c.wantImpl)
			}
			var stored TrackedPlan
			if err := json.Unmarshal([]byte(f.commits[len(f.commits)-1].Plan), &stored); err != nil || stored.Status != c.wantImpl {
				t.Fatalf("committed %+v (%v)", stored, err)
			}
			if ev := f.eventList(); ev[len(ev)-1] != "steps:"+c.wantImpl {
				t.Fatalf("events %v", ev)
			}
		})
	}
}

func TestTrackerLoad(t *testing.T) {
	running, _ := json.Marshal(TrackedPlan{Title: "P", Status: ImplRunning, Steps: []PlanStep{{ID: "s1", Status: StepPending}}})
	done, _ := json.Marshal(TrackedPlan{Title: "P", Status: ImplDone})
	cases := []struct {
		name       string
		row        Row
		restarted  bool
		fail       error
		wantErr    bool
		wantStatus string // "" no plan
		wantReason string
		commits    int
		todos      int
	}{
		{name: "restart pauses a running implementation", row: Row{Plan: string(running)}, restarted: true, wantStatus: ImplPaused, wantReason: "paused by restart", commits: 1},
		{name: "this process's own stays running", row: Row{Plan: string(running)}, wantStatus: ImplRunning},
		{name: "a done one stays done", row: Row{Plan: string(done)}, restarted: true, wantStatus: ImplDone},
		{name: "corrupt todo list starts empty", row: Row{Todos: "{", Plan: string(done)}, wantStatus: ImplDone},
		{name: "corrupt plan is dropped", row: Row{Todos: `[{"id":"t","content":"a","status":"pending"}]`, Plan: "{"}, restarted: true, todos: 1},
		{name: "the pause's commit failing fails the load", row: Row{Plan: string(running)}, restarted: true, fail: errors.New("read-only"), wantErr: true, wantStatus: ImplPaused, wantReason: "paused by restart"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, f := newTracker(t, "")
			f.fail = c.fail
			err := tr.Load(context.Background(), c.row, c.restarted)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			p := tr.Plan()
			switch {
			case c.wantStatus == "" && p != nil:
				t.Fatalf("plan %+v", p)
			case c.wantStatus != "" && (p == nil || p.Status != c.wantStatus || p.Reason != c.wantReason):
				t.Fatalf("plan %+v", p)
			}
			if len(f.commits) != c.commits || len(tr.Todos()) != c.todos {
				t.Fatalf("%d commits, todos %+v", len(f.commits), tr.Todos())
			}
			if len(f.eventList()) != 0 {
				t.Fatalf("loading published %v", f.eventList())
			}
		})
	}
}

func TestTrackerStatusAndResume(t *testing.T) {
	ctx := context.Background()
	body := "# P\n\n## Steps\n1. Add the flag\n2. Print the name\n"
	t.Run("transitions", func(t *testing.T) {
		tr, f := newTracker(t, "")
		tr.SetStatus(ctx, ImplPaused, "x") // nothing tracked
		tr.Begin(Accepted{Title: "P", Body: body, Policy: handoff.Policy{Model: "m"}})
		tr.SetStatus(ctx, ImplRunning, "") // already there
		if len(f.commits) != 0 || len(f.eventList()) != 0 {
			t.Fatalf("no-op transitions committed %d, published %v", len(f.commits), f.eventList())
		}
		f.fail = errors.New("disk full")
		// A pause whose commit fails is kept in memory (the safe side) but
		// never announced; the caller gets the error.
		if err := tr.SetStatus(ctx, ImplPaused, "why"); !errors.Is(err, f.fail) {
			t.Fatalf("a failed pause returned %v", err)
		}
		if p := tr.Plan(); p.Status != ImplPaused || p.Reason != "why" || len(f.eventList()) != 0 {
			t.Fatalf("%+v %v", p, f.eventList())
		}
		// A move to running whose commit fails is put back, unannounced.
		if err := tr.SetStatus(ctx, ImplRunning, ""); !errors.Is(err, f.fail) {
			t.Fatalf("a failed move to running returned %v", err)
		}
		if p := tr.Plan(); p.Status != ImplPaused || p.Reason != "why" || len(f.eventList()) != 0 {
			t.Fatalf("a failed move to running left %+v %v", p, f.eventList())
		}
		f.fail = nil
		// Paused in memory already: pausing again commits nothing (the next
		// commit of the row, a step or a resume, stores what memory holds).
		if err := tr.SetStatus(ctx, ImplPaused, "why"); err != nil || len(f.commits) != 0 {
			t.Fatalf("pausing a paused one: %v, %d commits", err, len(f.commits))
		}
		prompt, policy, err := tr.Resume(ctx)
		if err != nil || policy.Model != "m" || !strings.HasPrefix(prompt, "Resume implementing the accepted plan. ") {
			t.Fatalf("resume %q %+v %v", prompt, policy, err)
		}
		if tr.Plan().Status != ImplRunning {
			t.Fatal("not running after resume")
		}
		if _, _, err := tr.Resume(ctx); !errors.Is(err, ErrNothingToResume) {
			t.Fatalf("resume of a running one: %v", err)
		}
		for _, id := range []string{"s1", "s2"} {
			tr.UpdateStep(ctx, id, StepCompleted)
		}
		tr.SetStatus(ctx, ImplPaused, "late") // done is final
		if tr.Plan().Status != ImplDone || tr.Running() {
			t.Fatalf("done moved: %+v", tr.Plan())
		}
	})
	t.Run("a restart's pause resumes as interrupted", func(t *testing.T) {
		tr, _ := newTracker(t, "")
		row, _ := json.Marshal(TrackedPlan{Title: "P", Status: ImplRunning, Steps: []PlanStep{{ID: "s1", Imperative: "Add", Status: StepPending}}})
		tr.Load(ctx, Row{Plan: string(row)}, true)
		prompt, _, err := tr.Resume(ctx)
		if err != nil || !strings.HasPrefix(prompt, handoff.InterruptedPrompt(tr.Plan().Carry())[:20]) || strings.Contains(prompt, "Resume implementing") {
			t.Fatalf("resume %q %v", prompt, err)
		}
	})
}

func TestTrackerBeginUndo(t *testing.T) {
	tr, f := newTracker(t, "")
	mine, prev := tr.Begin(Accepted{Title: "A", Body: "# A\n\n## Steps\n1. Do it\n"})
	if prev != nil || tr.Ref().Title != "A" || !tr.Running() {
		t.Fatalf("begin: prev %v ref %+v", prev, tr.Ref())
	}
	if !strings.Contains(tr.Row().Plan, `"status":"running"`) {
		t.Fatalf("row %q", tr.Row().Plan)
	}
	// A second start that fails to commit puts A back.
	second, prevA := tr.Begin(Accepted{Title: "B", Body: "# B\n"})
	tr.Undo(second, prevA)
	if tr.Ref().Title != "A" {
		t.Fatalf("undo: %+v", tr.Ref())
	}
	// A start that lost to a concurrent one that won leaves the winner.
	tr.Begin(Accepted{Title: "C", Body: "# C\n"})
	tr.Undo(mine, nil)
	if tr.Ref().Title != "C" {
		t.Fatalf("the winner was undone: %+v", tr.Ref())
	}
	tr.Forget()
	if tr.Plan() != nil || tr.Ref() != nil || tr.Row().Plan != "" {
		t.Fatal("forget kept the plan")
	}
	if len(f.commits) != 0 || len(f.eventList()) != 0 {
		t.Fatal("Begin, Undo or Forget called the port")
	}
}

func TestStageBaseAndCommitted(t *testing.T) {
	ctx := context.Background()
	ws := repo(t, map[string]string{"a.txt": "one\n", "sub/x.txt": "x\n"})
	writeFile(t, filepath.Join(ws, "a.txt"), "dirty\n") // dirty at acceptance
	dir := filepath.Join(t.TempDir(), "review")
	first, err := StageBase(ctx, dir, filepath.Join(ws, "sub"), "T", "h", "work://plans/a.md", []string{"x.txt"})
	if err != nil || !baseIDRE.MatchString(first) {
		t.Fatalf("stage %q %v", first, err)
	}
	b, err := loadBaseAt(filepath.Join(dir, first))
	if err != nil {
		t.Fatal(err)
	}
	if b.Root == "" || b.Prefix != "sub/" || b.Head != git(t, ws, "rev-parse", "HEAD") || string(b.Dirty["a.txt"].Content) != "dirty\n" {
		t.Fatalf("base %+v", b)
	}
	if got := readFile(t, filepath.Join(dir, first, "scope.json")); got != `{"paths":["x.txt"]}` {
		t.Fatalf("scope %s", got)
	}
	// A staged base no commit names is never current; the committed one
	// is, and the earlier directories and legacy files go.
	second, err := StageBase(ctx, dir, ws, "T", "h", "work://plans/a.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "report.json"), "{}")
	if err := BaseCommitted(dir, second); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, currentFile)) != second+"\n" {
		t.Fatal("current not named")
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the earlier base stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a legacy file stayed")
	}
	if err := BaseCommitted(dir, ""); err != nil {
		t.Fatal(err)
	}
	// A workspace that is no checkout: a base without a root.
	plain, err := StageBase(ctx, dir, t.TempDir(), "T", "h", "work://plans/a.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := loadBaseAt(filepath.Join(dir, plain)); err != nil || b.Root != "" {
		t.Fatalf("plain base %+v %v", b, err)
	}
	// An offline reader refuses a current naming no base.
	writeFile(t, filepath.Join(dir, currentFile), "../../etc\n")
	if _, err := ReadStoredReport(dir); err == nil || !strings.Contains(err.Error(), "no valid base") {
		t.Fatalf("read through a forged current: %v", err)
	}
}

func TestTrackerReport(t *testing.T) {
	ctx := context.Background()
	t.Run("no accepted plan", func(t *testing.T) {
		tr, _ := newTracker(t, "")
		if _, err := tr.Report(ctx); !errors.Is(err, ErrNoReport) || !strings.Contains(err.Error(), "no plan has been accepted") {
			t.Fatalf("report: %v", err)
		}
		if _, err := tr.FileDiff(ctx, "a.txt"); !errors.Is(err, ErrNoReport) {
			t.Fatalf("diff: %v", err)
		}
		if tr.StoredReport() != nil {
			t.Fatal("a stored report from nowhere")
		}
	})
	t.Run("built, stored and published once ended", func(t *testing.T) {
		ws := repo(t, map[string]string{"b/c.txt": "c\n", "keep.txt": "k\n"})
		tr, f := newTracker(t, ws)
		accept(t, tr, f, []string{"a.txt", "b"})
		tr.UpdateStep(ctx, "s1", StepInProgress)
		writeFile(t, filepath.Join(ws, "a.txt"), "hello\n")
		tr.LogTool(Call{ID: "1", Name: "write_file", Writes: []string{filepath.Join(ws, "a.txt"), "work://notes/n.md", "../out.txt"}}, true, "ok")
		writeFile(t, filepath.Join(ws, "unrelated.txt"), "u\n")
		tr.LogTool(Call{ID: "2", Name: "bash", Command: "true"}, true, "\n[exit status 0]")
		tr.ReportIfEnded(ctx, false) // not ended: nothing built
		if tr.StoredReport() != nil || slices.Contains(f.eventList(), "report") {
			t.Fatal("built before the end")
		}
		tr.UpdateStep(ctx, "s1", StepCompleted)
		tr.UpdateStep(ctx, "s2", StepCompleted)
		tr.ReportIfEnded(ctx, false)
		r := tr.StoredReport()
		if r == nil {
			t.Fatal("no report stored at the end")
		}
		if !slices.Equal(r.Outside, []string{"unrelated.txt"}) || r.Steps[0].Files[0] != "a.txt" || len(r.Validation) != 1 || !r.Validation[0].Ran || *r.Validation[0].Exit != 0 {
			t.Fatalf("report %+v", r)
		}
		if !slices.Contains(r.DoneNoChange, "s2") {
			t.Fatalf("s2 done with no change not flagged: %+v", r.DoneNoChange)
		}
		tr.ReportIfEnded(ctx, true) // once
		if n := strings.Count(strings.Join(f.eventList(), " "), "report"); n != 1 {
			t.Fatalf("%d reports built", n)
		}
		offline, err := ReadStoredReport(tr.cfg.Dir)
		if err != nil || offline.Summary != r.Summary {
			t.Fatalf("offline %+v %v", offline, err)
		}
		d, err := tr.FileDiff(ctx, "a.txt")
		if err != nil || !strings.Contains(d, "+hello") {
			t.Fatalf("diff %q %v", d, err)
		}
		for _, bad := range []string{"../x", "/etc/passwd", ""} {
			if _, err := tr.FileDiff(ctx, bad); !errors.Is(err, ErrBadPath) {
				t.Errorf("diff of %q: %v", bad, err)
			}
		}
	})
	t.Run("the log is kept only while running", func(t *testing.T) {
		ws := repo(t, map[string]string{"b/c.txt": "c\n"})
		tr, f := newTracker(t, ws)
		accept(t, tr, f, nil)
		tr.SetStatus(ctx, ImplPaused, "x")
		if tr.Logging() {
			t.Fatal("logging while paused")
		}
		tr.LogTool(Call{ID: "1", Name: "write_file", Writes: []string{"a.txt"}}, true, "")
		tr.SetStatus(ctx, ImplRunning, "")
		tr.LogTool(Call{ID: "2", Name: "write_file", Writes: []string{"b/c.txt"}}, true, "")
		evs := readEvents(tr.baseDir())
		if len(evs) != 1 || evs[0].Paths[0] != "b/c.txt" || evs[0].Exit != -1 {
			t.Fatalf("log %+v", evs)
		}
	})
	t.Run("an unreadable archive is an error", func(t *testing.T) {
		ws := repo(t, map[string]string{"x": "x\n"})
		tr, f := newTracker(t, ws)
		accept(t, tr, f, nil)
		f.artifacts["plans/accepted-x.md"] = "changed"
		if _, err := tr.Report(ctx); err == nil || errors.Is(err, ErrNoReport) {
			t.Fatalf("report over a changed archive: %v", err)
		}
	})
}

func TestTrackerScope(t *testing.T) {
	tr, f := newTracker(t, "")
	hash := proposal.HashBody(planBody)
	if got := tr.CardScope(hash, planBody); !slices.Equal(got, []string{"a.txt", "b/c.txt"}) {
		t.Fatalf("derived %v", got)
	}
	if err := tr.SetCardScope(hash, []string{}); err != nil {
		t.Fatal(err)
	}
	if got := tr.CardScope(hash, planBody); len(got) != 0 {
		t.Fatalf("the person's empty scope: %v", got)
	}
	if _, err := os.Stat(filepath.Join(tr.cfg.Work, "plans", "scope-"+hash[:16]+".json")); err != nil {
		t.Fatal("the override is not where a restart reads it")
	}
	if tr.Holding() {
		t.Fatal("held with nothing accepted")
	}
	ws := repo(t, map[string]string{"x": "x\n"})
	f.ws = ws
	accept(t, tr, f, []string{"src"})
	if !tr.Holding() || !tr.Allows("src/a.go") || tr.Allows("docs/a.md") {
		t.Fatal("scope not held")
	}
	tr.Extend([]string{"src/b.go", "docs/a.md", "docs/a.md"})
	if !tr.Allows("docs/a.md") || len(f.scopes) != 1 || !slices.Equal(f.scopes[0].Extensions, []string{"docs/a.md"}) {
		t.Fatalf("extension %+v", f.scopes)
	}
	tr.Extend([]string{"src/c.go"}) // already allowed: nothing recorded
	if len(f.scopes) != 1 {
		t.Fatal("a write inside the scope was recorded")
	}
	// Fails closed: a scope file that cannot be read allows nothing, and
	// is still held (TestTrackerUnreadableScopeHoldsEverything).
	writeFile(t, tr.scopePath(), "{")
	if tr.Allows("src/a.go") || !tr.Holding() {
		t.Fatal("a corrupt scope allowed a write")
	}
}

func TestTrackerVersions(t *testing.T) {
	tr, _ := newTracker(t, "")
	v1 := "# P\n\nline 2\nline 3\n"
	v2 := "# P\n\nline 2 changed\nline 3\n"
	h1, h2 := proposal.HashBody(v1), proposal.HashBody(v2)
	if _, err := tr.DiffVersions(h1, 0, 0); !errors.Is(err, ErrNoVersion) {
		t.Fatalf("diff with no versions: %v", err)
	}
	for _, b := range []string{v1, v1, v2} {
		if err := tr.RecordVersion(proposal.HashBody(b), b); err != nil {
			t.Fatal(err)
		}
	}
	vs := tr.Versions()
	if len(vs) != 2 || vs[0].Hash != h1 || vs[1].Path != "work://plans/v2.md" {
		t.Fatalf("versions %+v", vs)
	}
	if fi, err := os.Stat(filepath.Join(tr.cfg.Work, "plans", "v1.md")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("v1 not read-only: %v", err)
	}
	if err := tr.SaveComments(h1, []Comment{{Line: 3, Text: "  why?  "}, {Line: 4, Text: "ok"}}); err != nil {
		t.Fatal(err)
	}
	c := tr.Card(h2, v2)
	if c.Version != 2 || c.Revisions != 1 || len(c.Comments) != 2 || c.Comments[0].Status != "addressed" || c.Comments[0].Text != "why?" || c.Comments[1].Status != "open" {
		t.Fatalf("card %+v", c)
	}
	if c := tr.Card("nohash", v2); c.Version != 0 {
		t.Fatalf("card of no version %+v", c)
	}
	d, err := tr.DiffVersions(h2, 0, 0)
	if err != nil || d.From != 1 || d.To != 2 || !strings.Contains(d.Diff, "+line 2 changed") {
		t.Fatalf("diff %+v %v", d, err)
	}
	if _, err := tr.DiffVersions(h2, 1, 7); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "plan version 7 does not exist") {
		t.Fatalf("diff to v7: %v", err)
	}
	// Corrupt comments show on the card as a notice, never fail it.
	os.Chmod(filepath.Join(tr.cfg.Work, "plans", "v1.comments.json"), 0o644)
	writeFile(t, filepath.Join(tr.cfg.Work, "plans", "v1.comments.json"), "[")
	if c := tr.Card(h2, v2); c.Version != 2 || !strings.Contains(c.Notice, "is corrupt") {
		t.Fatalf("card over corrupt comments %+v", c)
	}
}

func TestTrackerChecks(t *testing.T) {
	ws := repo(t, map[string]string{"main.go": "package main\n\nfunc Greet() {}\n"})
	tr, _ := newTracker(t, ws)
	body := "# P\n\n## Summary\nx\n\n## Key Changes\n- Edit `missing.go` and `Greet`\n"
	h := proposal.HashBody(body)
	if tr.ChecksHint(h) != "" {
		t.Fatal("a hint before the checks ran")
	}
	w := tr.Warnings(h, body, ws)
	if w == nil || tr.ChecksHint(h) == "" || !strings.Contains(tr.ChecksHint(h), "missing.go") {
		t.Fatalf("warnings %+v hint %q", w, tr.ChecksHint(h))
	}
	os.Remove(filepath.Join(ws, "main.go"))
	if again := tr.Warnings(h, body, ws); len(again) != len(w) {
		t.Fatal("the checks of one proposal ran twice")
	}
	if tr.ChecksHint("other") != "" {
		t.Fatal("another proposal's hint")
	}
	if got := CheckDir(body, filepath.Join(ws, "nowhere")); got == nil {
		t.Fatal("nil warnings")
	}
}

func TestTrackerTools(t *testing.T) {
	tr, f := newTracker(t, "")
	tr.Begin(Accepted{Title: "P", Body: "# P\n\n## Steps\n1. Add the flag\n2. Print the name\n"})
	tools := map[string]SessionTool{}
	for _, tl := range tr.Tools() {
		tools[tl.Name] = tl
		if !json.Valid(tl.Parameters) {
			t.Fatalf("%s: parameters are not JSON", tl.Name)
		}
	}
	ctx := context.Background()
	cases := []struct {
		tool, args, want, wantErr string
	}{
		{"todo_write", `{"items":[{"content":"look","status":"in_progress"}]}`, "[>] look", ""},
		{"todo_write", `{"items":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, "", "previous list is unchanged"},
		{"todo_write", `{"items":"x"}`, "", "todo_write: invalid arguments"},
		{"todo_write", `{"items":[]}`, "Todo list cleared.", ""},
		{"update_plan_step", `{"step":"s1","status":"completed"}`, "1 of 2 steps finished.", ""},
		{"update_plan_step", `{"step":"s7","status":"completed"}`, "", `no step "s7"`},
		{"update_plan_step", `[`, "", "update_plan_step: invalid arguments"},
	}
	for _, c := range cases {
		out, err := tools[c.tool].Run(ctx, json.RawMessage(c.args))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s %s: err %v, want %q", c.tool, c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s %s: %q %v, want %q", c.tool, c.args, out, err, c.want)
		}
	}
	if ev := f.eventList(); !slices.Equal(ev, []string{"todos", "todos", "steps:running"}) {
		t.Fatalf("events %v", ev)
	}
}

// A crash between staging a base and the commit naming it: the staged
// base is never read; the tracked plan's base stays the one in use.
func TestTrackerStagedBaseNoCommitNamesIsNeverRead(t *testing.T) {
	ctx := context.Background()
	ws := repo(t, map[string]string{"b/c.txt": "c\n"})
	tr, f := newTracker(t, ws)
	id := accept(t, tr, f, []string{"b"})
	writeFile(t, filepath.Join(ws, "b/c.txt"), "later\n")
	if _, err := StageBase(ctx, tr.cfg.Dir, ws, "Greet", "h", "work://plans/accepted-x.md", []string{"."}); err != nil {
		t.Fatal(err)
	}
	// The next process loads the committed row.
	again := NewTracker(tr.cfg)
	f.t = again
	if err := again.Load(ctx, tr.Row(), true); err != nil {
		t.Fatal(err)
	}
	if again.baseDir() != filepath.Join(tr.cfg.Dir, id) || again.Allows("other.txt") {
		t.Fatalf("base %s", again.baseDir())
	}
	r, err := again.Report(ctx)
	if err != nil || len(r.Files) != 1 || r.Files[0].Path != "b/c.txt" {
		t.Fatalf("report %+v %v", r, err)
	}
	if readFile(t, filepath.Join(tr.cfg.Dir, currentFile)) != id+"\n" {
		t.Fatal("current moved without a commit")
	}
}

// A report that cannot be stored is an error, and nothing is published.
func TestTrackerReportWriteFails(t *testing.T) {
	ws := repo(t, map[string]string{"b/c.txt": "c\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, nil)
	if err := os.MkdirAll(filepath.Join(tr.baseDir(), "report.json", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Report(context.Background()); err == nil {
		t.Fatal("a report that could not be stored was reported built")
	}
	if slices.Contains(f.eventList(), "report") {
		t.Fatal("published a report that was not stored")
	}
}

// A step whose commit fails leaves the tracked plan as it was in memory
// too: the last step's failed commit must not end the implementation in
// this process only (which would release the held scope, stop the tool
// log and build a report of an implementation the store still has
// running), and the previous step status is what a later commit stores.
func TestTrackerStepFailedCommitChangesNothing(t *testing.T) {
	ws := repo(t, map[string]string{"a.txt": "a\n", "b/c.txt": "c\n"})
	tr, f := newTracker(t, ws)
	ctx := context.Background()
	accept(t, tr, f, []string{"a.txt"})
	p := tr.Plan()
	if len(p.Steps) < 2 {
		t.Fatalf("steps %+v", p.Steps)
	}
	for _, st := range p.Steps[:len(p.Steps)-1] {
		if _, err := tr.UpdateStep(ctx, st.ID, StepCompleted); err != nil {
			t.Fatal(err)
		}
	}
	last := p.Steps[len(p.Steps)-1].ID
	if _, err := tr.UpdateStep(ctx, last, StepInProgress); err != nil {
		t.Fatal(err)
	}
	if !tr.Holding() {
		t.Fatal("no scope held while running")
	}
	boom := errors.New("disk full")
	f.fail = boom
	if _, err := tr.UpdateStep(ctx, last, StepCompleted); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the commit's", err)
	}
	got := tr.Plan()
	if got.Status != ImplRunning {
		t.Fatalf("implementation %s after a failed commit, want %s", got.Status, ImplRunning)
	}
	if st := got.Steps[len(got.Steps)-1].Status; st != StepInProgress {
		t.Fatalf("last step %s after a failed commit, want %s", st, StepInProgress)
	}
	if !tr.Running() || !tr.Holding() || !tr.Logging() {
		t.Fatalf("running %v holding %v logging %v after a failed commit", tr.Running(), tr.Holding(), tr.Logging())
	}
	f.fail = nil
	tr.ReportIfEnded(ctx, false)
	if ev := f.eventList(); slices.Contains(ev, "report") {
		t.Fatalf("a report of an implementation the store has running: %v", ev)
	}
	// The next commit stores the state as it was, not the failed step.
	tr.SetStatus(ctx, ImplPaused, "x")
	var stored TrackedPlan
	if err := json.Unmarshal([]byte(f.commits[len(f.commits)-1].Plan), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status != ImplPaused || stored.Steps[len(stored.Steps)-1].Status != StepInProgress {
		t.Fatalf("stored %+v", stored)
	}
}

// A resume whose commit fails resumes nothing: the implementation stays
// paused (in memory, in the store, on every surface) and no prompt goes
// out, so a model never implements while the store has it paused.
func TestTrackerResumeFailedCommit(t *testing.T) {
	ctx := context.Background()
	tr, f := newTracker(t, "")
	tr.Begin(Accepted{Title: "P", Body: "# P\n\n## Steps\n1. Add the flag\n2. Print the name\n"})
	tr.SetStatus(ctx, ImplPaused, "why")
	commits, events := len(f.commits), len(f.eventList())
	boom := errors.New("disk full")
	f.fail = boom
	prompt, _, err := tr.Resume(ctx)
	if !errors.Is(err, boom) || prompt != "" {
		t.Fatalf("resume over a failing commit: %q %v", prompt, err)
	}
	if p := tr.Plan(); p.Status != ImplPaused || p.Reason != "why" {
		t.Fatalf("after a failed resume: %+v", p)
	}
	if len(f.commits) != commits || len(f.eventList()) != events {
		t.Fatalf("committed %d, published %v", len(f.commits)-commits, f.eventList()[events:])
	}
	f.fail = nil
	if _, _, err := tr.Resume(ctx); err != nil || tr.Plan().Status != ImplRunning {
		t.Fatalf("a later resume: %v %+v", err, tr.Plan())
	}
}
