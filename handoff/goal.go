package handoff

import (
	"errors"
	"fmt"
	"time"

	"planbridge/goal"
)

// ErrGoalConflict is returned by [GoalFor] when the session's Goal cannot
// be the one this handoff reserved; that Goal is left untouched.
var ErrGoalConflict = errors.New("goal conflict")

// PlanRef is the Goal's reference to the accepted plan:
// work://<path>#<sha256>.
func PlanRef(a Artifact) string { return "work://" + a.Path + "#" + a.Hash }

// GoalFor decides the Goal step of a Goal handoff, given the session's
// current Goal (nil if none): the reserved Goal (rec.GoalID) is reused only
// when its plan reference and policy both match, and reactivated if only a
// restart paused it; a reserved Goal that does not match, or any other
// unfinished Goal, is [ErrGoalConflict]; otherwise a new Goal is made
// (created true). It changes nothing but the reactivation.
func GoalFor(rec *Record, cur *goal.Goal, now time.Time) (g *goal.Goal, created bool, err error) {
	ref := PlanRef(rec.Artifact)
	policy := goal.Policy{Model: rec.Policy.Model, Effort: rec.Policy.Effort, Mode: rec.Policy.Mode}
	switch {
	case cur != nil && cur.ID == rec.GoalID:
		if cur.PlanRef != ref || cur.Policy != policy {
			return nil, false, fmt.Errorf("%w: the reserved Goal %s no longer matches the accepted plan or policy; it was left untouched", ErrGoalConflict, cur.ID)
		}
		if cur.Status == goal.Paused && cur.Reason == goal.ReasonRestart {
			cur.Status, cur.Reason = goal.Active, "" // reactivate without scheduling
		}
		return cur, false, nil
	case cur != nil && cur.Status.Unfinished():
		return nil, false, fmt.Errorf("%w: another unfinished Goal exists (%s); it was left untouched", ErrGoalConflict, cur.Summary())
	}
	objective := fmt.Sprintf("Implement the accepted plan %q (work://%s); its outcomes, constraints and acceptance criteria are the completion contract.", rec.Title, rec.Artifact.Path)
	g, err = goal.New(rec.GoalID, objective, rec.Selection.Budget, ref, policy, now)
	return g, err == nil, err
}
