package handoff

import (
	"context"
	"fmt"

	"planbridge/goal"
)

// Accepting is what a validated acceptance carries into the pipeline.
type Accepting struct {
	Selection Selection // validated, Branch set for Worktree
	Title     string
	Body      string // the plan, verified against Hash
	Hash      string
}

// AcceptPort is what [Accept] needs from the session whose card is
// accepted. Commit is the one acceptance transaction.
type AcceptPort interface {
	// Validate checks the attempt, the selection, the fork blockers and
	// branch, an unfinished Goal and the model, and reads the plan. A
	// refusal leaves the card pending and changes nothing.
	Validate(ctx context.Context) (Accepting, error)
	// Archive writes the accepted plan immutably at a.Path (an identical
	// file is reused, a different one refused).
	Archive(ctx context.Context, a Artifact, body string) error
	// Commit makes the acceptance final in one transaction (proposal
	// accepted, Plan left, tracking started, rec written), after checking
	// again that the attempt is current and its selection unchanged; on
	// failure nothing moved and the card stays pending.
	Commit(ctx context.Context, rec *Record, in Accepting) error
	// Committed brings the session in line with the commit and announces
	// it (the card closed as accepted, the plan's steps); it commits
	// nothing the restart needs.
	Committed(ctx context.Context, rec *Record, in Accepting)
	// Start runs [Run] on rec as the session's owning workflow.
	Start(rec *Record) error
	// Failpoint is called between the durable steps ("handoff.archived",
	// "handoff.committed", "handoff.recorded").
	Failpoint(name string)
}

// ArtifactPath is where an accepted plan of hash is archived.
func ArtifactPath(hash string) string { return "plans/accepted-" + hash[:min(16, len(hash))] + ".md" }

// Accept is the acceptance step machine: validate (a refusal changes
// nothing); archive the plan immutably, before any metadata moves; then
// one transaction makes the acceptance final and writes the retry record
// (with a reserved Goal id for Goal execution); then the pipeline starts.
// A crash after the archive leaves the card pending, and accepting again
// reuses the identical archive; a crash after the commit resumes from the
// record.
func Accept(ctx context.Context, p AcceptPort) (*Record, error) {
	in, err := p.Validate(ctx)
	if err != nil {
		return nil, err
	}
	art := Artifact{Path: ArtifactPath(in.Hash), Hash: in.Hash}
	if err := p.Archive(ctx, art, in.Body); err != nil {
		return nil, fmt.Errorf("archive the accepted plan: %w", err)
	}
	p.Failpoint("handoff.archived")
	rec := &Record{Step: StepRecorded, Selection: in.Selection, Artifact: art, Title: in.Title, Policy: in.Selection.Policy()}
	if in.Selection.Execution == Goal {
		rec.GoalID = goal.NewID()
	}
	if err := p.Commit(ctx, rec, in); err != nil {
		return nil, err
	}
	p.Failpoint("handoff.committed")
	p.Committed(ctx, rec, in)
	p.Failpoint("handoff.recorded")
	return rec, p.Start(rec)
}
