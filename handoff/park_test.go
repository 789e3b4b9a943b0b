package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// parkWorld is what survives a "crash" of the fake session.
type parkWorld struct {
	archives map[string]string // path → body
	parked   int               // committed parked plans
	pending  bool              // the card is still pending
}

type fakePark struct {
	w        *parkWorld
	refuse   error
	sel      *Selection // the card's (default: Here, Current, Direct)
	expect   *Selection
	bodies   int
	failOp   string
	crashAt  string
	archived int
}

func (f *fakePark) Presented(ctx context.Context) (Presented, error) {
	if f.refuse != nil {
		return Presented{}, f.refuse
	}
	sel := Selection{Location: Here, Context: Current, Execution: Direct, Mode: "ask"}
	if f.sel != nil {
		sel = *f.sel
	}
	return Presented{Selection: sel, Title: "T", Hash: "0123456789abcdef0123"}, nil
}
func (f *fakePark) Body(ctx context.Context) (string, error) {
	f.bodies++
	return "# T\n", nil
}
func (f *fakePark) Archive(ctx context.Context, a Artifact, body string) error {
	if f.failOp == "archive" {
		return syscall.ENOSPC
	}
	if old, ok := f.w.archives[a.Path]; ok && old != body {
		return errors.New("a different archive exists")
	}
	f.w.archives[a.Path] = body
	f.archived++
	return nil
}
func (f *fakePark) Head() (string, string) { return "abc", "main" }
func (f *fakePark) Commit(ctx context.Context, pk Parking) error {
	if f.failOp == "commit" {
		return syscall.ENOSPC
	}
	if pk.Head != "abc" || pk.Branch != "main" || pk.Artifact.Path != ArtifactPath("0123456789abcdef0123") {
		return fmt.Errorf("commit got %+v", pk)
	}
	f.w.parked++
	f.w.pending = false
	return nil
}
func (f *fakePark) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}

func parkUntil(f *fakePark) (crashed string, err error) {
	defer func() {
		if r := recover(); r != nil {
			crashed = r.(crash).at
		}
	}()
	_, err = Park(context.Background(), f, f.expect)
	return "", err
}

// TestParkSteps: every way a park can stop leaves either nothing parked
// with the card pending, or exactly one parked plan; a crash after the
// archive is redone with the identical archive reused.
func TestParkSteps(t *testing.T) {
	for _, c := range []struct {
		name             string
		f                fakePark
		wantErr          bool
		parkedAfterRetry int
	}{
		{"ok", fakePark{}, false, 1},
		{"refused", fakePark{refuse: errors.New("stale")}, true, 1},
		{"archive fails", fakePark{failOp: "archive"}, true, 1},
		{"commit fails", fakePark{failOp: "commit"}, true, 1},
		{"crash after the archive", fakePark{crashAt: "park.archived"}, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &parkWorld{archives: map[string]string{}, pending: true}
			f := c.f
			f.w = w
			crashed, err := parkUntil(&f)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if err != nil || crashed != "" {
				if w.parked != 0 || !w.pending {
					t.Fatalf("a stopped park changed the state: %+v", *w)
				}
				// Again, with nothing in the way: exactly once.
				if _, err := parkUntil(&fakePark{w: w}); err != nil {
					t.Fatal(err)
				}
			}
			if w.parked != c.parkedAfterRetry || w.pending || len(w.archives) != 1 {
				t.Fatalf("after the park: %+v", *w)
			}
		})
	}
}

type fakeStart struct {
	fakeRun
	refuse  error
	waiting bool // a record waits
	claimed int
	head    string
	failOp  string
	crashAt string
	commits int
	starts  int
	rec     *Record
}

func (f *fakeStart) Claim() error {
	if f.refuse != nil {
		return f.refuse
	}
	f.claimed++
	return nil
}
func (f *fakeStart) RecordWaiting(ctx context.Context) bool { return f.waiting }
func (f *fakeStart) PlanBody(ctx context.Context, rec *Record) (string, error) {
	if f.failOp == "body" {
		return "", errors.New("the archive does not match its hash")
	}
	return "# T\n", nil
}
func (f *fakeStart) Head() (string, string) { return f.head, "main" }
func (f *fakeStart) Commit(ctx context.Context, st Started, body string) error {
	if f.failOp == "commit" {
		return syscall.ENOSPC
	}
	f.commits++
	f.rec = st.Record
	return nil
}
func (f *fakeStart) Start(rec *Record) error { f.starts++; return nil }
func (f *fakeStart) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}

// TestStartParkedSteps: a start refused or failing before its commit
// changes nothing and starts nothing; a committed start runs the handoff
// once (or, crashed right after the commit, leaves the record for the
// one recovery path); the Location and branch apply; a Goal execution
// reserves its Goal; a moved HEAD is reported.
func TestStartParkedSteps(t *testing.T) {
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	pk := Parking{Selection: Selection{Location: Here, Context: Fresh, Execution: Direct, Mode: "edits"},
		Title: "T", Artifact: Artifact{Path: "plans/accepted-x.md", Hash: "h"}, Head: "0123456789abcdef"}
	goalPk := pk
	goalPk.Selection.Execution = Goal
	for _, c := range []struct {
		name    string
		f       fakeStart
		pk      Parking
		loc     Location
		branch  string
		wantErr string
		commits int
		starts  int
		check   func(t *testing.T, f *fakeStart, st Started)
	}{
		{"here", fakeStart{head: "0123456789abcdef"}, pk, "", "", "", 1, 1, func(t *testing.T, f *fakeStart, st Started) {
			if st.StaleBase || st.Notice != "" || f.rec.Step != StepRecorded || f.rec.Selection.Context != Fresh || f.rec.Policy.Mode != "edits" {
				t.Errorf("started %+v record %+v", st, f.rec)
			}
		}},
		{"worktree with a branch", fakeStart{fakeRun: fakeRun{root: root}, head: "0123456789abcdef"}, pk, Worktree, "plan/x", "", 1, 1, func(t *testing.T, f *fakeStart, st Started) {
			if f.rec.Selection.Location != Worktree || f.rec.Selection.Branch != "plan/x" || strings.Join(f.reads, " ") != "blockers root model" {
				t.Errorf("record %+v after the checks %v", f.rec, f.reads)
			}
		}},
		{"worktree on an existing branch", fakeStart{fakeRun: fakeRun{root: root}}, pk, Worktree, "taken", "branch taken already exists", 0, 0, nil},
		{"a bad location", fakeStart{}, pk, "moon", "", `location "moon": want here or worktree`, 0, 0, func(t *testing.T, f *fakeStart, st Started) {
			if f.claimed != 0 {
				t.Error("claimed the session for a bad location")
			}
		}},
		{"refused by the session", fakeStart{refuse: errors.New("busy")}, pk, "", "", "busy", 0, 0, func(t *testing.T, f *fakeStart, st Started) {
			if len(f.reads) != 0 {
				t.Errorf("checked after a refused claim: %v", f.reads)
			}
		}},
		{"a record waits", fakeStart{waiting: true}, pk, "", "", ErrRecordWaiting.Message, 0, 0, func(t *testing.T, f *fakeStart, st Started) {
			if f.claimed != 1 || len(f.reads) != 0 {
				t.Errorf("claimed %d, checks %v", f.claimed, f.reads)
			}
		}},
		{"goal unfinished", fakeStart{fakeRun: fakeRun{goal: true}}, goalPk, "", "", "finish or clear it before starting with Goal", 0, 0, nil},
		{"archive tampered", fakeStart{failOp: "body"}, pk, "", "", "archive", 0, 0, nil},
		{"commit fails", fakeStart{failOp: "commit"}, pk, "", "", "no space", 0, 0, nil},
		{"crash after the commit", fakeStart{crashAt: "handoff.recorded"}, pk, "", "", "crash", 1, 0, nil},
		{"HEAD moved", fakeStart{head: "fedcba9876543210"}, pk, "", "", "", 1, 1, func(t *testing.T, f *fakeStart, st Started) {
			if !st.StaleBase || st.Head != "fedcba9876543210" || !strings.Contains(st.Notice, "0123456789ab → fedcba987654") {
				t.Errorf("stale base: %+v", st)
			}
		}},
		{"HEAD gone", fakeStart{head: ""}, pk, "", "", "", 1, 1, func(t *testing.T, f *fakeStart, st Started) {
			if !st.StaleBase || !strings.Contains(st.Notice, "→ no commit") {
				t.Errorf("stale base: %+v", st)
			}
		}},
		{"goal", fakeStart{head: "0123456789abcdef"}, goalPk, "", "", "", 1, 1, func(t *testing.T, f *fakeStart, st Started) {
			if f.rec.GoalID == "" {
				t.Error("no Goal reserved")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			var st Started
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("crash at " + r.(crash).at)
					}
				}()
				st, err = StartParked(context.Background(), &f, c.pk, c.loc, c.branch)
				return err
			}()
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if f.commits != c.commits || f.starts != c.starts {
				t.Fatalf("%d commits and %d starts, want %d and %d", f.commits, f.starts, c.commits, c.starts)
			}
			if c.check != nil {
				c.check(t, &f, st)
			}
		})
	}
}

// TestParkValidation: a park refuses, before reading the plan and with
// nothing parked, settings other than the expected ones (a branch of its
// own aside) and a selection that does not validate.
func TestParkValidation(t *testing.T) {
	card := Selection{Location: Here, Context: Current, Execution: Direct, Mode: "ask"}
	otherBranch, otherContext, invalid := card, card, card
	otherBranch.Branch = "plan/else"
	otherContext.Context = Summary
	invalid.Mode = "yolo"
	for _, c := range []struct {
		name         string
		sel, expect  *Selection
		code         string
		bodies, park int
	}{
		{"no expectation", nil, nil, "", 1, 1},
		{"as expected", nil, &card, "", 1, 1},
		{"as expected but the branch", nil, &otherBranch, "", 1, 1},
		{"settings changed", nil, &otherContext, CodeSettingsChanged, 0, 0},
		{"invalid", &invalid, nil, CodeInvalidSelection, 0, 0},
	} {
		w := &parkWorld{archives: map[string]string{}, pending: true}
		f := &fakePark{w: w, sel: c.sel, expect: c.expect}
		_, err := parkUntil(f)
		if f.bodies != c.bodies || w.parked != c.park || len(w.archives) != c.park {
			t.Errorf("%s: %d reads, %d parked, %d archives; want %d, %d", c.name, f.bodies, w.parked, len(w.archives), c.bodies, c.park)
		}
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if r, ok := AsRefusal(err); !ok || r.Code != c.code {
			t.Errorf("%s: %#v, want %s", c.name, err, c.code)
		}
	}
}

// TestSameSettings: the branch aside, any axis differing differs.
func TestSameSettings(t *testing.T) {
	a := Selection{Location: Worktree, Context: Fresh, Execution: Goal, Budget: 5, Mode: "ask", Model: "m", Effort: "high",
		Skills: []string{"/s/SKILL.md"}, Instructions: "x", Branch: "plan/a"}
	b := a
	b.Branch = "plan/b"
	if !a.SameSettings(b) || !a.SameSettings(a) {
		t.Error("the branch counted")
	}
	for name, change := range map[string]func(*Selection){
		"location": func(s *Selection) { s.Location = Here }, "context": func(s *Selection) { s.Context = Current },
		"execution": func(s *Selection) { s.Execution = Direct }, "budget": func(s *Selection) { s.Budget = 6 },
		"mode": func(s *Selection) { s.Mode = "edits" }, "model": func(s *Selection) { s.Model = "n" },
		"effort": func(s *Selection) { s.Effort = "" }, "skills": func(s *Selection) { s.Skills = nil },
		"instructions": func(s *Selection) { s.Instructions = "y" },
	} {
		c := a
		change(&c)
		if a.SameSettings(c) {
			t.Errorf("%s: a change not seen", name)
		}
	}
}

// TestStartParkedInvalid: a Location or a parked selection that cannot
// start is an invalid_selection refusal in the person's words, before the
// session is claimed.
func TestStartParkedInvalid(t *testing.T) {
	pk := Parking{Selection: Selection{Location: Here, Context: Fresh, Execution: Direct, Mode: "edits"}, Title: "T", Artifact: Artifact{Path: "plans/a.md", Hash: "ab"}}
	bad := pk
	bad.Selection.Context = "sideways"
	for _, c := range []struct {
		name string
		pk   Parking
		loc  Location
		want string
	}{
		{"a location", pk, "moon", `location "moon": want here or worktree`},
		{"the selection", bad, "", bad.Selection.Validate().Error()},
	} {
		f := &fakeStart{}
		_, err := StartParked(context.Background(), f, c.pk, c.loc, "")
		if r, ok := err.(*Refusal); !ok || r.Code != CodeInvalidSelection || r.Message != c.want || f.claimed != 0 {
			t.Errorf("%s: %#v (claimed %d), want an %s refusal %q", c.name, err, f.claimed, CodeInvalidSelection, c.want)
		}
	}
}

// TestStartAndAcceptResults: what a start and an acceptance tell the
// client, field by field (the protocol's JSON), and a parked selection
// read back from its stored form or refused.
func TestStartAndAcceptResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  any
		want string
	}{
		{"start", Started{}.Result("s-1", "work://plans/accepted-x.md"),
			`{"started":true,"session":"s-1","artifact":"work://plans/accepted-x.md","stale_base":false,"message":"Preparing implementation..."}`},
		{"start on a moved HEAD", Started{StaleBase: true, Head: "abc", Notice: "HEAD moved"}.Result("s-1", "work://a.md"),
			`{"started":true,"session":"s-1","artifact":"work://a.md","stale_base":true,"head":"abc","notice":"HEAD moved","message":"Preparing implementation..."}`},
		{"accept", Accepted("work://plans/accepted-x.md"),
			`{"accepted":true,"artifact":"work://plans/accepted-x.md","message":"Preparing implementation..."}`},
	} {
		if b, _ := json.Marshal(tc.got); string(b) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, b, tc.want)
		}
	}
	sel := Selection{Location: Worktree, Context: Fresh, Execution: Direct, Branch: "b"}
	if got, err := ParkedSelection(sel.Stored()); err != nil || !got.SameSettings(sel) || got.Branch != "b" {
		t.Errorf("ParkedSelection(Stored) = %+v, %v", got, err)
	}
	if _, err := ParkedSelection("{not json"); err == nil {
		t.Error("an unreadable selection was read")
	} else if r, ok := AsRefusal(err); !ok || r.Code != CodeInvalidSelection || !strings.HasPrefix(r.Message, "the parked selection is unreadable: ") {
		t.Errorf("ParkedSelection of junk = %#v", err)
	}
}
