package handoff

import (
	"errors"
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
