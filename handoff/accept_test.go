package handoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

type fakeAccept struct {
	fakeRun
	archives  map[string]string // path → body (write-once)
	records   []*Record
	started   int
	committed int // Committed calls (the session in line with the commit)
	refuse    error
	sel       *Selection // the card's (default: Here, Current, Goal)
	title     string
	bodyErr   error
	bodies    int // Body reads
	failOp    string
	crashAt   string
}

func (f *fakeAccept) Presented(ctx context.Context) (Presented, error) {
	if f.refuse != nil {
		return Presented{}, f.refuse
	}
	sel := Selection{Location: Here, Context: Current, Execution: Goal, Mode: "ask"}
	if f.sel != nil {
		sel = *f.sel
	}
	title := f.title
	if title == "" {
		title = "T"
	}
	return Presented{Selection: sel, Title: title, Hash: "0123456789abcdef0123"}, nil
}

func (f *fakeAccept) Body(ctx context.Context) (string, error) {
	f.bodies++
	return "# T\n", f.bodyErr
}

func (f *fakeAccept) Archive(ctx context.Context, a Artifact, body string) error {
	if old, ok := f.archives[a.Path]; ok && old != body {
		return errors.New("exists with different content")
	}
	f.archives[a.Path] = body
	return nil
}

func (f *fakeAccept) Commit(ctx context.Context, rec *Record, in Accepting) error {
	if f.failOp == "acceptance" {
		return syscall.ENOSPC
	}
	if in.Body != "# T\n" || in.Hash != "0123456789abcdef0123" || !in.Selection.SameSettings(rec.Selection) || in.Selection.Branch != rec.Selection.Branch {
		return fmt.Errorf("commit got %+v for %+v", in, rec)
	}
	c := *rec
	f.records = append(f.records, &c)
	return nil
}

func (f *fakeAccept) Committed(ctx context.Context, rec *Record, in Accepting) {
	if len(f.records) == 0 || f.records[len(f.records)-1].Marshal() != rec.Marshal() {
		panic("Committed before its commit")
	}
	f.committed++
}

func (f *fakeAccept) Start(rec *Record) error { f.started++; return nil }

func (f *fakeAccept) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}

func accept(f *fakeAccept) (crashed string, err error) {
	defer func() {
		if r := recover(); r != nil {
			crashed = r.(crash).at
		}
	}()
	_, err = Accept(context.Background(), f, "", "")
	return "", err
}

// TestAcceptSteps: a refusal changes nothing; a crash after the archive
// leaves no record and accepting again reuses the archive; a crash after
// the commit leaves exactly one record (the pipeline resumes from it); a
// failing commit starts nothing; the Goal id is reserved in the record.
func TestAcceptSteps(t *testing.T) {
	f := &fakeAccept{archives: map[string]string{}, refuse: errors.New("stale")}
	if _, err := accept(f); err == nil || len(f.archives) != 0 || len(f.records) != 0 {
		t.Fatalf("refusal: %v %+v", err, f)
	}
	f = &fakeAccept{archives: map[string]string{}, crashAt: "handoff.archived"}
	if c, _ := accept(f); c != "handoff.archived" || len(f.records) != 0 || len(f.archives) != 1 {
		t.Fatalf("crash after archive: %q %+v", c, f)
	}
	f.crashAt = ""
	if _, err := accept(f); err != nil || len(f.archives) != 1 || len(f.records) != 1 || f.started != 1 {
		t.Fatalf("accepting again: %v %+v", err, f)
	}
	if f.records[0].GoalID == "" || f.records[0].Step != StepRecorded || f.records[0].Artifact.Path != "plans/accepted-0123456789abcdef.md" {
		t.Fatalf("record %+v", f.records[0])
	}
	f = &fakeAccept{archives: map[string]string{}, failOp: "acceptance"}
	if _, err := accept(f); !errors.Is(err, syscall.ENOSPC) || f.started != 0 || len(f.records) != 0 || f.committed != 0 {
		t.Fatalf("failing commit: %v %+v", err, f)
	}
}

// TestAcceptFailpoints: a crash at each of Accept's failpoints leaves what
// the step before it committed and nothing after it: no record before
// the acceptance commit, exactly one from then on; the session brought in
// line only past handoff.committed; the pipeline started only past
// handoff.recorded.
func TestAcceptFailpoints(t *testing.T) {
	for _, c := range []struct {
		at                          string
		records, committed, started int
	}{
		{"handoff.archived", 0, 0, 0},
		{"handoff.committed", 1, 0, 0},
		{"handoff.recorded", 1, 1, 0},
		{"", 1, 1, 1},
	} {
		f := &fakeAccept{archives: map[string]string{}, crashAt: c.at}
		crashed, err := accept(f)
		if crashed != c.at || err != nil {
			t.Fatalf("%q: crashed at %q, %v", c.at, crashed, err)
		}
		if len(f.archives) != 1 || len(f.records) != c.records || f.committed != c.committed || f.started != c.started {
			t.Errorf("%q: %d archives, %d records, %d committed, %d started; want 1, %d, %d, %d",
				c.at, len(f.archives), len(f.records), f.committed, f.started, c.records, c.committed, c.started)
		}
	}
}

// TestAcceptValidation: each of Accept's refusals, in its order, stops
// before the archive with nothing changed (no archive, no record, the
// plan not even read past a refusal of the selection); the branch is the
// acceptance's, else the card's for a Worktree.
func TestAcceptValidation(t *testing.T) {
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	sel := func(loc Location, branch string) *Selection {
		return &Selection{Location: loc, Context: Current, Execution: Direct, Mode: "ask", Branch: branch}
	}
	invalid := sel(Here, "")
	invalid.Mode = "yolo"
	stale := errors.New("this approval card is no longer current")
	for _, c := range []struct {
		name       string
		f          fakeAccept
		branch     string
		expect     Location
		code       string // a Refusal's code; "" with err: that error
		err        error
		wantBranch string
		bodies     int
	}{
		{name: "stale attempt", f: fakeAccept{refuse: stale}, err: stale},
		{name: "expected location", f: fakeAccept{sel: sel(Here, "")}, expect: Worktree, code: CodeSettingsChanged},
		{name: "expected location holds", f: fakeAccept{sel: sel(Here, "")}, expect: Here, bodies: 1},
		{name: "invalid selection", f: fakeAccept{sel: invalid}, code: CodeInvalidSelection},
		{name: "goal unfinished", f: fakeAccept{fakeRun: fakeRun{goal: true}}, code: CodeGoalUnfinished},
		{name: "model", f: fakeAccept{fakeRun: fakeRun{model: errors.New("model gone")}, sel: sel(Here, "")}, code: CodeInvalidSelection},
		{name: "worktree, the card's branch", f: fakeAccept{fakeRun: fakeRun{root: root}, sel: sel(Worktree, ""), title: "Add a flag"},
			wantBranch: "plan/add-a-flag", bodies: 1},
		{name: "worktree, the card's chosen branch", f: fakeAccept{fakeRun: fakeRun{root: root}, sel: sel(Worktree, "feature/x")},
			wantBranch: "feature/x", bodies: 1},
		{name: "worktree, the acceptance's branch", f: fakeAccept{fakeRun: fakeRun{root: root}, sel: sel(Worktree, "feature/x")}, branch: "feature/y",
			wantBranch: "feature/y", bodies: 1},
		{name: "worktree, existing branch", f: fakeAccept{fakeRun: fakeRun{root: root}, sel: sel(Worktree, "")}, branch: "taken", code: CodeForkBlocked},
		{name: "worktree, blocked", f: fakeAccept{fakeRun: fakeRun{root: root, blockers: []string{"a request is running"}}, sel: sel(Worktree, "")}, code: CodeForkBlocked},
		{name: "plan unreadable", f: fakeAccept{bodyErr: errors.New("changed outside planbridge")}, err: errors.New("changed outside planbridge"), bodies: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			f.archives = map[string]string{}
			_, err := Accept(context.Background(), &f, c.branch, c.expect)
			if f.bodies != c.bodies {
				t.Errorf("plan read %d times, want %d", f.bodies, c.bodies)
			}
			if c.code == "" && c.err == nil {
				if err != nil || len(f.records) != 1 || f.started != 1 || f.records[0].Selection.Branch != c.wantBranch {
					t.Fatalf("accepted: %v %+v", err, f.records)
				}
				return
			}
			if len(f.archives) != 0 || len(f.records) != 0 || f.started != 0 {
				t.Errorf("a refusal changed something: %+v", f)
			}
			if c.err != nil {
				if err == nil || err.Error() != c.err.Error() {
					t.Errorf("err %v, want %v", err, c.err)
				}
				return
			}
			if r, ok := AsRefusal(err); !ok || r.Code != c.code || strings.TrimSpace(r.Message) == "" {
				t.Errorf("err %#v, want %s", err, c.code)
			}
		})
	}
}
