package handoff

import (
	"context"
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

// GoalPort is what the Goal step needs from the session whose handoff
// runs with Goal execution.
type GoalPort interface {
	// UpdateGoal calls decide with the session's current Goal (nil if
	// none) under the session's lock, so no Goal action interleaves. If
	// decide returns a Goal, it becomes the session's Goal (with kickoff
	// pending when kickoff is not "") and is committed, the retry record
	// cleared, in one transaction (the Goal start's commit); if that
	// commit fails the session's Goal is as it was, also when decide
	// changed it in place. An error from decide changes nothing.
	UpdateGoal(ctx context.Context, decide func(cur *goal.Goal) (next *goal.Goal, kickoff string, err error)) error
	// Failpoint is called after the commit ("handoff.goal").
	Failpoint(name string)
}

// StartGoal is the Goal step of a handoff: the kickoff is built (the
// skills revalidated: a missing one means no Goal), the Goal decided by
// [GoalFor] (a new one gets the kickoff pending; the reserved one is
// reused, reactivated if a restart paused it), and one commit persists it
// and clears the record. The Goal then owns the kickoff, which the
// session's Goal continuation dispatches first in line; a crash after the
// commit therefore never builds a second Goal.
func StartGoal(ctx context.Context, env Env, p GoalPort, rec *Record) error {
	prompt, _, err := BuildKickoff(ctx, env, rec)
	if err != nil {
		return err
	}
	err = p.UpdateGoal(ctx, func(cur *goal.Goal) (*goal.Goal, string, error) {
		g, created, err := GoalFor(rec, cur, time.Now())
		if err != nil || !created {
			return g, "", err
		}
		return g, prompt, nil
	})
	if err != nil {
		return err
	}
	p.Failpoint("handoff.goal")
	return nil
}
