package handoff

import (
	"context"
	"encoding/json"
	"fmt"

	"planbridge/goal"
)

// Parking is a plan approved and parked: archived, nothing started. Head
// and Branch are the workspace's at approval ("" outside git).
type Parking struct {
	Selection Selection
	Title     string
	Artifact  Artifact
	Head      string
	Branch    string
}

// ParkPort is what [Park] needs from the session whose card is parked.
type ParkPort interface {
	CardPort
	// Head is the workspace's HEAD commit and branch ("" outside git).
	Head() (hash, branch string)
	// Commit records the parked plan, the proposal parked and the card's
	// outcome in one transaction, after checking again that the attempt
	// is current and its selection unchanged.
	Commit(ctx context.Context, pk Parking) error
	// Failpoint is called between the durable steps ("park.archived").
	Failpoint(name string)
}

// Park is the approve-and-park step machine: validate; archive the plan
// (the archive an acceptance would write, so a later start or acceptance
// reuses it); one transaction records it parked with the selection and
// the workspace HEAD. Nothing starts. A crash after the archive leaves the
// card pending and parking again reuses the identical archive.
//
// Validation, in this order: the attempt; the whole selection, unless
// expect is nil ([ErrSettingsChanged] unless [Selection.SameSettings]: a
// browser page thus parks exactly the settings it showed); the selection
// ([CodeInvalidSelection]); the plan's text. A parked plan's run checks
// are its start's ([StartParked]).
func Park(ctx context.Context, p ParkPort, expect *Selection) (Parking, error) {
	pr, err := p.Presented(ctx)
	if err != nil {
		return Parking{}, err
	}
	if expect != nil && !pr.Selection.SameSettings(*expect) {
		return Parking{}, ErrSettingsChanged
	}
	if err := pr.Selection.Validate(); err != nil {
		return Parking{}, &Refusal{Code: CodeInvalidSelection, Message: err.Error()}
	}
	body, err := p.Body(ctx)
	if err != nil {
		return Parking{}, err
	}
	in := Accepting{Selection: pr.Selection, Title: pr.Title, Body: body, Hash: pr.Hash}
	art := Artifact{Path: ArtifactPath(in.Hash), Hash: in.Hash}
	if err := p.Archive(ctx, art, in.Body); err != nil {
		return Parking{}, fmt.Errorf("archive the approved plan: %w", err)
	}
	p.Failpoint("park.archived")
	pk := Parking{Selection: in.Selection, Title: in.Title, Artifact: art}
	pk.Head, pk.Branch = p.Head()
	return pk, p.Commit(ctx, pk)
}

// StartPort is what [StartParked] needs from the session that parked the
// plan.
type StartPort interface {
	// RunPort is read by [CheckRun] once the session is claimed.
	RunPort
	// Claim refuses the start with [StartBlocker] of the session's
	// [StartState] or, in the same critical section, claims the session
	// for it (its caller releases the claim once the start handed over
	// or failed).
	Claim() error
	// RecordWaiting reports whether an accepted plan of the session waits
	// for its recovery.
	RecordWaiting(ctx context.Context) bool
	// PlanBody returns rec's archived plan, verified against its hash.
	PlanBody(ctx context.Context, rec *Record) (string, error)
	// Head is the workspace's HEAD commit and branch now ("" outside git).
	Head() (hash, branch string)
	// Commit makes the start final in one transaction: the parked plan
	// marked started (it starts at most once), the proposal accepted, Plan
	// left, the plan tracked, st.Record written.
	Commit(ctx context.Context, st Started, body string) error
	// Start runs [Run] on rec as the session's owning workflow.
	Start(rec *Record) error
	// Failpoint is called after the commit ("handoff.recorded").
	Failpoint(name string)
}

// Started is what [StartParked] did. StaleBase is set when the workspace
// HEAD (Head, now) moved since approval; Notice then says from what to
// what.
type Started struct {
	Record    *Record
	StaleBase bool
	Head      string
	Notice    string
}

// StartParked starts a parked plan through the same durable handoff as an
// acceptance: location ("" keeps the parked one) and branch (Worktree)
// apply to the parked selection, which must validate; the session is
// claimed ([StartPort.Claim]), no record may wait ([ErrRecordWaiting]),
// and [CheckRun] must pass; a Goal execution reserves its Goal id; one commit
// marks it started and writes the record; then the handoff runs. The
// archive is reused, never rewritten.
func StartParked(ctx context.Context, p StartPort, pk Parking, location Location, branch string) (Started, error) {
	sel := pk.Selection
	switch location {
	case "":
	case Here, Worktree:
		sel.Location = location
	default:
		return Started{}, &Refusal{Code: CodeInvalidSelection, Message: fmt.Sprintf("location %q: want here or worktree", location)}
	}
	if err := sel.Validate(); err != nil {
		return Started{}, &Refusal{Code: CodeInvalidSelection, Message: err.Error()}
	}
	sel.Branch = branch
	if err := p.Claim(); err != nil {
		return Started{}, err
	}
	if p.RecordWaiting(ctx) {
		return Started{}, ErrRecordWaiting
	}
	if err := CheckRun(p, sel, "starting"); err != nil {
		return Started{}, err
	}
	st := Started{Record: &Record{Step: StepRecorded, Selection: sel, Artifact: pk.Artifact, Title: pk.Title, Policy: sel.Policy()}}
	body, err := p.PlanBody(ctx, st.Record)
	if err != nil {
		return Started{}, fmt.Errorf("the parked plan's archive: %w", err)
	}
	if sel.Execution == Goal {
		st.Record.GoalID = goal.NewID()
	}
	if head, _ := p.Head(); pk.Head != "" && head != pk.Head {
		st.StaleBase, st.Head = true, head
		now := "no commit"
		if head != "" {
			now = short(head)
		}
		st.Notice = fmt.Sprintf("HEAD moved since this plan was approved (%s → %s): review it against the new base.", short(pk.Head), now)
	}
	if err := p.Commit(ctx, st, body); err != nil {
		return Started{}, err
	}
	p.Failpoint("handoff.recorded")
	return st, p.Start(st.Record)
}

// StartResult is what starting a parked plan tells the client: the
// session it runs in, the archive (artifact, a work:// address), a HEAD
// that moved since approval (StaleBase, Head now, and Notice saying from
// what to what) and [PreparingNotice].
type StartResult struct {
	Started   bool   `json:"started"`
	Session   string `json:"session"`
	Artifact  string `json:"artifact"`
	StaleBase bool   `json:"stale_base"`
	Head      string `json:"head,omitempty"`
	Notice    string `json:"notice,omitempty"`
	Message   string `json:"message"`
}

// Result is st as the client reads it: a start in session of the plan
// archived at artifact.
func (st Started) Result(session, artifact string) StartResult {
	return StartResult{Started: true, Session: session, Artifact: artifact, StaleBase: st.StaleBase, Head: st.Head,
		Notice: st.Notice, Message: PreparingNotice}
}

// ParkedSelection reads a parked plan's stored selection (its
// [Selection.Stored] form); one that does not read is a
// [CodeInvalidSelection] refusal, and the plan cannot start.
func ParkedSelection(stored string) (Selection, error) {
	var sel Selection
	if err := json.Unmarshal([]byte(stored), &sel); err != nil {
		return Selection{}, &Refusal{Code: CodeInvalidSelection, Message: "the parked selection is unreadable: " + err.Error()}
	}
	return sel, nil
}

// short is a commit hash cut to 12 digits for display.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
