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

// Presented is the card's proposal as its current attempt presents it.
type Presented struct {
	Selection Selection // as stored, not yet validated
	Title     string
	Hash      string
}

// CardPort is what [Accept] and [Park] read of the approval card they
// decide, and how they archive its plan.
type CardPort interface {
	// Presented checks that the attempt is current (else it refuses,
	// changing nothing) and returns the card's proposal and selection,
	// read atomically with that check.
	Presented(ctx context.Context) (Presented, error)
	// Body is the plan the card shows (the stored proposed text,
	// verified against its hash).
	Body(ctx context.Context) (string, error)
	// Archive writes the plan immutably at a.Path (an identical file is
	// reused, a different one refused).
	Archive(ctx context.Context, a Artifact, body string) error
}

// AcceptPort is what [Accept] needs from the session whose card is
// accepted. Commit is the one acceptance transaction.
type AcceptPort interface {
	// RunPort is read by [CheckRun] before anything moves.
	RunPort
	CardPort
	// Commit makes the acceptance final in one transaction (proposal
	// accepted, Plan left, tracking started, rec written), after checking
	// again that the attempt is current and its selection unchanged; on
	// failure nothing moved and the card stays pending.
	Commit(ctx context.Context, rec *Record, in Accepting) error
	// Committed brings the session in line with the commit and announces
	// it (the card closed as accepted, the plan's steps). Nothing a
	// restart needs is left to it: the card's outcome it records is best
	// effort (the event log holds it too).
	Committed(ctx context.Context, rec *Record, in Accepting)
	// Start runs [Run] on rec as the session's owning workflow.
	Start(rec *Record) error
	// Failpoint is called between the durable steps ("handoff.archived",
	// "handoff.committed", "handoff.recorded").
	Failpoint(name string)
}

// AcceptResult is what an acceptance tells the client: its archive
// (artifact, a work:// address) and [PreparingNotice].
type AcceptResult struct {
	Accepted bool   `json:"accepted"`
	Artifact string `json:"artifact"`
	Message  string `json:"message"`
}

// Accepted is the result of an acceptance whose archive is artifact.
func Accepted(artifact string) AcceptResult {
	return AcceptResult{Accepted: true, Artifact: artifact, Message: PreparingNotice}
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
//
// Validation, in this order: the attempt ([CardPort.Presented]); the
// Location, unless expect is "" ([ErrSettingsChanged]: a browser link
// thus never accepts a Location it may not choose); the selection
// ([CodeInvalidSelection]); with branch the acceptance's, for a Worktree
// that names none the card's ([Selection.BranchFor]), [CheckRun]; the
// plan's text.
func Accept(ctx context.Context, p AcceptPort, branch string, expect Location) (*Record, error) {
	pr, err := p.Presented(ctx)
	if err != nil {
		return nil, err
	}
	sel := pr.Selection
	if expect != "" && sel.Location != expect {
		return nil, ErrSettingsChanged
	}
	if err := sel.Validate(); err != nil {
		return nil, &Refusal{Code: CodeInvalidSelection, Message: err.Error()}
	}
	if sel.Location == Worktree && branch == "" {
		branch = sel.BranchFor(pr.Title) // the card's branch
	}
	sel.Branch = branch
	if err := CheckRun(p, sel, "accepting"); err != nil {
		return nil, err
	}
	body, err := p.Body(ctx)
	if err != nil {
		return nil, err
	}
	in := Accepting{Selection: sel, Title: pr.Title, Body: body, Hash: pr.Hash}
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
