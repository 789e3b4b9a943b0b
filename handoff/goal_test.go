package handoff

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"planbridge/goal"
)

func TestGoalFor(t *testing.T) {
	now := time.Now()
	rec := newRecord(Here, Current, Goal)
	rec.GoalID, rec.Policy = "g-1", Policy{Model: "m", Mode: "edits"}
	policy := goal.Policy{Model: "m", Mode: "edits"}
	mk := func(id, ref string, p goal.Policy) *goal.Goal {
		g, err := goal.New(id, "x", 0, ref, p, now)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g, created, err := GoalFor(rec, nil, now)
	if err != nil || !created || g.ID != "g-1" || g.PlanRef != PlanRef(rec.Artifact) || g.Policy != policy {
		t.Fatalf("new: %+v %v %v", g, created, err)
	}
	reserved := mk("g-1", PlanRef(rec.Artifact), policy)
	reserved.RestorePaused()
	g, created, err = GoalFor(rec, reserved, now)
	if err != nil || created || g != reserved || g.Status != goal.Active {
		t.Fatalf("reserved, paused by restart: %+v %v %v", g, created, err)
	}
	for name, cur := range map[string]*goal.Goal{
		"reserved, other plan":   mk("g-1", "work://other#h", policy),
		"reserved, other policy": mk("g-1", PlanRef(rec.Artifact), goal.Policy{Model: "other"}),
		"another unfinished":     mk("g-2", "", policy),
	} {
		before := *cur
		if _, _, err := GoalFor(rec, cur, now); !errors.Is(err, ErrGoalConflict) {
			t.Errorf("%s: %v", name, err)
		}
		if cur.Status != before.Status || cur.ID != before.ID {
			t.Errorf("%s: the conflicting Goal was changed", name)
		}
	}
	done := mk("g-0", "", policy)
	if err := done.Update("complete", "ok"); err != nil {
		t.Fatal(err)
	}
	if _, created, err := GoalFor(rec, done, now); err != nil || !created {
		t.Fatalf("a finished Goal blocks nothing: %v %v", created, err)
	}
}

// fakeGoals is a session's Goal behind [GoalPort].
type fakeGoals struct {
	cur     *goal.Goal
	kickoff string
	commits int
	failOp  string
	crashAt string
	calls   int
}

func (f *fakeGoals) UpdateGoal(ctx context.Context, decide func(*goal.Goal) (*goal.Goal, string, error)) error {
	f.calls++
	var snapshot *goal.Goal
	if f.cur != nil {
		c := *f.cur
		snapshot = &c
	}
	g, kickoff, err := decide(f.cur)
	if err != nil {
		return err
	}
	if f.failOp == "goal" {
		f.cur = snapshot // the contract: as it was
		return syscall.ENOSPC
	}
	if g != f.cur {
		f.cur, f.kickoff = g, kickoff
	}
	f.commits++
	return nil
}

func (f *fakeGoals) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}

// TestStartGoalSteps: the Goal step makes exactly one Goal whatever stops
// it: a failing commit or a conflict leaves the session's Goal as it was;
// a crash after the commit, retried, reuses the committed Goal; a restart
// that paused the reserved Goal reactivates it; an unusable skill means
// no Goal at all.
func TestStartGoalSteps(t *testing.T) {
	ctx := context.Background()
	newRec := func() *Record {
		rec := newRecord(Here, Current, Goal)
		rec.GoalID = "g-1"
		return rec
	}
	env := &fakeEnv{w: &world{}}

	f := &fakeGoals{}
	if err := StartGoal(ctx, env, f, newRec()); err != nil {
		t.Fatal(err)
	}
	if f.commits != 1 || f.cur == nil || f.cur.ID != "g-1" || !strings.Contains(f.kickoff, "# Plan") {
		t.Fatalf("new Goal: %+v kickoff %q", f, f.kickoff)
	}

	f = &fakeGoals{failOp: "goal"}
	if err := StartGoal(ctx, env, f, newRec()); !errors.Is(err, syscall.ENOSPC) || f.cur != nil {
		t.Fatalf("a failing commit: %v, Goal %+v", err, f.cur)
	}

	f = &fakeGoals{crashAt: "handoff.goal"}
	func() {
		defer func() { recover() }()
		StartGoal(ctx, env, f, newRec())
	}()
	committed := f.cur
	f.crashAt = ""
	if err := StartGoal(ctx, env, f, newRec()); err != nil || f.cur != committed || f.commits != 2 {
		t.Fatalf("retry after a crash past the commit: %v, %d commits, same Goal %v", err, f.commits, f.cur == committed)
	}

	paused := *committed
	paused.RestorePaused()
	f = &fakeGoals{cur: &paused}
	if err := StartGoal(ctx, env, f, newRec()); err != nil || f.cur.Status != goal.Active || f.kickoff != "" {
		t.Fatalf("reactivation: %v %+v %q", err, f.cur, f.kickoff)
	}

	other, _ := goal.New("g-2", "something else", 0, "", goal.Policy{}, time.Now())
	f = &fakeGoals{cur: other}
	if err := StartGoal(ctx, env, f, newRec()); !errors.Is(err, ErrGoalConflict) || f.cur != other || f.commits != 0 || other.Status != goal.Active {
		t.Fatalf("conflict: %v %+v", err, f)
	}

	rec := newRec()
	rec.Selection.Skills = []string{filepath.Join(t.TempDir(), "gone", "SKILL.md")}
	f = &fakeGoals{}
	if err := StartGoal(ctx, env, f, rec); err == nil || f.calls != 0 {
		t.Fatalf("an unusable skill: %v, %d updates", err, f.calls)
	}
}
