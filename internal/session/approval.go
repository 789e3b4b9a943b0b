package session

import (
	"context"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
	"planbridge/review"
)

// More stable error codes.
const (
	CodeStaleAttempt   = interaction.CodeStaleAttempt
	CodeNoProposal     = interaction.CodeNoProposal
	CodeNothingToRetry = "nothing_to_retry"
	CodeInvalidSelect  = handoff.CodeInvalidSelection
	CodeUnavailable    = "unavailable"
)

// ApprovalView is what a client needs to draw the approval card
// ([interaction.View]: the card of package handoff and the review parts).
type ApprovalView = interaction.View

// selectionLocked is the card's selection ([interaction.Card.SelectionLocked]).
func (s *Session) selectionLocked() handoff.Selection { return s.card.SelectionLocked() }

// checkAttemptLocked fails closed on a stale or missing attempt id (and
// while a selection change commits: [interaction.Card.CheckLocked]).
func (s *Session) checkAttemptLocked(attempt string) error {
	return refused(s.card.CheckLocked(attempt))
}

// closeApprovalLocked ends the presentation (under s.mu).
func (s *Session) closeApprovalLocked() string { return s.card.CloseLocked() }

// OpenApproval is [Session.Approval] for a client opening the card: the
// Worktree checks (uncommitted changes, the branch) run again first, so
// a branch created since the card was shown is named as a blocker.
func (s *Session) OpenApproval(ctx context.Context) ApprovalView { return s.card.Open(ctx) }

// Approval returns the current card (Pending false when there is none).
func (s *Session) Approval() ApprovalView { return s.card.View() }

// UpdateSelection applies one card edit ([interaction.Card.UpdateSelection]).
func (s *Session) UpdateSelection(ctx context.Context, attempt string, c handoff.Change) (ApprovalView, error) {
	v, err := s.card.UpdateSelection(ctx, attempt, c)
	return v, refused(err)
}

// SetHidden hides or re-shows the card; it stays pending either way.
func (s *Session) SetHidden(attempt string, hidden bool) (ApprovalView, error) {
	v, err := s.card.SetHidden(attempt, hidden)
	return v, refused(err)
}

// CancelApproval demotes the proposal to a draft and discards the selection.
func (s *Session) CancelApproval(ctx context.Context, attempt string) error {
	return refused(s.card.Cancel(ctx, attempt))
}

// Comment is a remark anchored to a line of the proposal.
type Comment = handoff.LineComment

// Feedback sends the person's revision request to the model inside a
// delimited envelope ([interaction.Card.Feedback]). Plan stays on; the
// selection survives.
func (s *Session) Feedback(ctx context.Context, attempt, text string, comments []Comment) error {
	return refused(s.card.Feedback(ctx, attempt, text, comments))
}

// EditProposal replaces the proposal with the person's edited text, which is
// what will be accepted (recorded as person-edited). A new presentation
// starts.
func (s *Session) EditProposal(ctx context.Context, attempt, body string) (ApprovalView, error) {
	v, err := s.card.Edit(ctx, attempt, body)
	return v, refused(err)
}

// AcceptResult tells the client what acceptance started.
type AcceptResult = handoff.AcceptResult

// Accept accepts the current proposal with the card's selection: validate,
// archive immutably, then (one transaction) mark accepted, leave Plan and
// write the retry record; then the handoff runs in the background.
func (s *Session) Accept(ctx context.Context, attempt, branch string) (AcceptResult, error) {
	return s.AcceptExpecting(ctx, attempt, branch, "")
}

// errSettingsChanged is [handoff.ErrSettingsChanged].
var errSettingsChanged = refused(handoff.ErrSettingsChanged)

// AcceptExpecting is [Session.Accept] that also refuses, atomically with
// the attempt check, unless the selection's Location is expect ("" = any):
// a browser link can thus never accept a Location it may not choose. It
// is [handoff.Accept] over this session.
func (s *Session) AcceptExpecting(ctx context.Context, attempt, branch string, expect handoff.Location) (AcceptResult, error) {
	rec, err := handoff.Accept(ctx, &acceptance{card: card{handoffEnv: handoffEnv{s}, attempt: attempt}}, branch, expect)
	if err != nil {
		return AcceptResult{}, refused(err)
	}
	return handoff.Accepted(agent.WorkScheme + rec.Artifact.Path), nil
}

// card is the session side of the card one [handoff.Accept] or
// [handoff.Park] decides ([handoff.CardPort]): its attempt and proposal.
type card struct {
	handoffEnv
	attempt string
	p       store.Proposal // presented; once committed, as committed
}

// Presented: a refusal leaves the card pending.
func (c *card) Presented(ctx context.Context) (handoff.Presented, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkAttemptLocked(c.attempt); err != nil {
		return handoff.Presented{}, err
	}
	c.p, _ = s.card.ProposalLocked() // pending: there is one
	return handoff.Presented{Selection: s.selectionLocked(), Title: c.p.Title, Hash: c.p.Hash}, nil
}

func (c *card) Body(ctx context.Context) (string, error) {
	body, _, err := c.s.proposalBody(c.p)
	return body, err
}

// Archive writes into the session's directory: refused once it is deleted.
func (c *card) Archive(ctx context.Context, art handoff.Artifact, body string) error {
	return c.s.whileLive(func() error {
		_, err := store.WriteFileOnce(c.s.workPath(art.Path), handoff.ArtifactData(body), 0o444)
		return err
	})
}

// closeLocked is the decision of the card's commit, under s.mu: the first
// decision wins and the selection is still sel; it closes the card, and
// undo reopens it as it was (shown or hidden, its timeout armed again)
// when the commit fails (nothing moved).
func (c *card) closeLocked(sel handoff.Selection) (attempt string, undo func(), err error) {
	s := c.s
	if err := s.checkAttemptLocked(c.attempt); err != nil {
		return "", nil, err
	}
	if cur := s.selectionLocked(); !cur.SameSettings(sel) {
		return "", nil, errSettingsChanged
	}
	attempt = s.closeApprovalLocked()
	return attempt, func() { s.card.ReopenLocked(attempt) }, nil
}

// acceptance is the session side of one [handoff.Accept] ([handoff.AcceptPort]).
type acceptance struct {
	card
	closed string // the attempt the commit closed
	base   string // the base the commit names
}

// Commit: accepted, Plan left, tracking, retry record — one transaction.
// From here acceptance is final.
func (a *acceptance) Commit(ctx context.Context, rec *handoff.Record, in handoff.Accepting) error {
	p := a.p
	p.Status, p.Rejections = ProposalAccepted, 0
	base, err := a.s.commitAccepted(ctx, store.Acceptance{Proposal: p}, rec, in.Body, func() (undo func(), err error) {
		a.closed, undo, err = a.closeLocked(in.Selection)
		return undo, err
	})
	if err == nil {
		a.p, a.base = p, base
	}
	return err
}

// Committed: the card closed as accepted (its outcome recorded, its
// selection riding along, so the transcript records what the
// implementation runs with), the start announced.
func (a *acceptance) Committed(ctx context.Context, rec *handoff.Record, in handoff.Accepting) {
	s, sel := a.s, in.Selection
	s.recordOutcome(ctx, a.closed, handoff.OutcomeAccepted, a.p.Title, a.p.Hash)
	s.emit(event.ApprovalClosed{Attempt: a.closed, Reason: handoff.OutcomeAccepted, Selection: &sel})
	s.started(a.base)
}

// commitAccepted is the one commit that starts an implementation
// (store.CommitAcceptance: c with the session leaving Plan, the plan's
// tracking and rec) for an acceptance and a parked plan's start alike.
// The base is staged before the commit names it (a Worktree
// implementation's is its fork's, staged at the hand-over); then, under
// s.mu, decide (which refuses, changing nothing, or returns how to undo
// it, nil for nothing) and the tracking begins, in one critical section;
// a failed commit undoes both, one that succeeds leaves the session on
// c.Proposal, out of Plan. A deleted session's is refused, nothing staged
// or written ([Session.whileLive]).
func (s *Session) commitAccepted(ctx context.Context, c store.Acceptance, rec *handoff.Record, body string, decide func() (undo func(), err error)) (base string, err error) {
	artifact := agent.WorkScheme + rec.Artifact.Path
	if rec.Selection.Location != handoff.Worktree {
		// Into the session's directory: refused once it is deleted.
		if err := s.whileLive(func() (err error) {
			base, err = s.track.StageBase(ctx, rec.Artifact.Hash, artifact, rec.Title, body)
			return refused(err)
		}); err != nil {
			return "", err
		}
	}
	err = s.commitChange(ctx, func() (change, error) {
		undo, err := decide()
		if err != nil {
			return change{}, err
		}
		c.Session = s.row
		c.Session.Plan = false
		mine, prevTrack := s.track.StartLocked(review.Accepted{Title: rec.Title, Artifact: artifact, Hash: rec.Artifact.Hash, Body: body, Policy: rec.Selection.Policy(), Base: base})
		c.Tracking, c.Record = store.Tracking(s.track.Row()), rec.Marshal()
		return change{commit: func(ctx context.Context) error { return s.m.st.CommitAcceptance(ctx, c) },
			undo: func() {
				if undo != nil {
					undo()
				}
				s.track.UndoLocked(mine, prevTrack) // a concurrent start that won keeps its own
			},
			// As committed; no later row commit writes Plan back on.
			done: func() { s.card.SetLocked(c.Proposal); s.row.Plan = false }}, nil
	})
	if err != nil {
		return "", err
	}
	return base, nil
}

// started announces an implementation whose start committed naming base:
// the base pointed at ([review.BaseCommitted]), the plan's steps, evs,
// the preparing notice, the views.
func (s *Session) started(base string, evs ...EventData) {
	s.track.BaseCommitted(base)
	s.track.EmitSteps()
	for _, ev := range evs {
		s.emit(ev)
	}
	s.emit(event.Notice{Message: handoff.PreparingNotice})
	s.changed()
}

// startHandoff runs the pipeline as the session's owning workflow.
func (s *Session) startHandoff(rec *handoff.Record) error {
	return s.own(func(ctx context.Context) func() {
		// The implementation is in flight again (it may have been paused by
		// a restart): one recovery path, so no second one applies.
		err := s.track.SetStatus(ctx, ImplRunning, "")
		if err == nil {
			s.emit(event.Handoff{State: "started", Step: rec.Step})
			err = handoff.Run(ctx, &handoffEnv{s: s}, rec)
		}
		if err != nil {
			msg := handoff.StoppedMessage(rec, err)
			return func() {
				s.emit(event.Handoff{State: "failed", Step: rec.Step, Reason: rec.Reason})
				s.emit(event.Error{Message: msg})
			}
		}
		// The report names the plan it implemented (provenance).
		ref := (&TrackedPlan{Title: rec.Title, Hash: rec.Artifact.Hash}).Ref()
		return func() {
			s.emit(event.Handoff{State: "done", Plan: &event.HandoffPlan{Title: ref.Title, Hash: ref.Hash, Trailer: ref.Trailer}})
		}
	})
}

// CodeSaveFailed reports that the accepted plan could not be saved into
// the project; the message names the workspace-relative path only.
const CodeSaveFailed = handoff.CodeSaveFailed

// SavePlanToProject copies the last accepted plan into the workspace
// ([handoff.SaveToProject]) and returns its workspace-relative path. A
// failure is a [CodeSaveFailed] error naming no absolute path.
func (s *Session) SavePlanToProject(ctx context.Context, date string) (string, error) {
	s.mu.Lock()
	p, ok := s.card.ProposalLocked()
	ws := s.row.Workspace
	s.mu.Unlock()
	if !ok || p.Status != ProposalAccepted {
		return "", &Error{Code: CodeNoProposal, Message: "there is no accepted plan to save"}
	}
	body, err := s.readArtifact(handoff.ArtifactPath(p.Hash), p.Hash)
	if err != nil {
		return "", err
	}
	rel, err := handoff.SaveToProject(ws, date, p.Title, handoff.ArtifactData(body))
	return rel, refused(err)
}
