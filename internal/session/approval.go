package session

import (
	"context"
	"os"
	"strings"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// More stable error codes.
const (
	CodeStaleAttempt   = "stale_attempt"
	CodeNoProposal     = "no_proposal"
	CodeNothingToRetry = "nothing_to_retry"
	CodeInvalidSelect  = handoff.CodeInvalidSelection
	CodeUnavailable    = "unavailable"
)

var errStale = &Error{Code: CodeStaleAttempt, Message: "this approval card is no longer current (stale or missing attempt id); nothing changed"}

// ApprovalView is what a client needs to draw the approval card: the
// card of package handoff ([handoff.Card]) and beside it the review parts.
type ApprovalView struct {
	handoff.Card
	// Warnings are the pre-approval checks of the plan against the
	// workspace (see package review); they never block acceptance.
	Warnings []review.Warning `json:"warnings"`
	// Version is the proposal's plan version (work://plans/vN.md, at
	// VersionPath); Revisions how many versions came before it.
	Version     int    `json:"version,omitempty"`
	Revisions   int    `json:"revisions"`
	VersionPath string `json:"version_path,omitempty"`
	// Comments are the line comments on the previous version, re-anchored
	// on this one (open, addressed or stale).
	Comments []review.Carried `json:"comments,omitempty"`
	// Scope is what the implementation will be held to: the paths its Key
	// Changes and steps name, or the person's edit (approval/update scope).
	Scope []string `json:"scope"`
}

// selectionLocked is [handoff.CardSelection] of the session's proposal.
func (s *Session) selectionLocked() handoff.Selection {
	stored := ""
	if s.prop != nil {
		stored = s.prop.Selection
	}
	return handoff.CardSelection(stored, func() handoff.Selection {
		cfg := s.m.modelConfig()
		return handoff.Defaults(s.row.Mode, cfg.GoalBudget, cfg.Workload(handoff.WorkloadImplementation))
	})
}

// presentApproval opens a new presentation of the current proposal with a
// fresh attempt id. The selection of an earlier proposal carries over; a
// first proposal snapshots the plan-implementation workload.
func (s *Session) presentApproval(ctx context.Context) {
	s.mu.Lock()
	if s.prop == nil || s.prop.Status != ProposalProposed || !s.row.Plan {
		s.mu.Unlock()
		return
	}
	p := *s.prop
	p.Selection = s.selectionLocked().Stored()
	s.approval = handoff.Approval{Attempt: handoff.NewAttemptID()}
	s.armTimeoutLocked()
	s.mu.Unlock()
	if err := s.putProposal(ctx, p); err != nil {
		s.m.log.Error("persist selection", "session", s.id, "err", err)
	}
	s.refreshWorktreeNotice(ctx)
	s.changed() // the card (with its pre-approval checks) and the status
}

// refreshWorktreeNotice reruns the card's Worktree checks
// ([handoff.CheckWorktreeCard]) when Worktree is selected (when the card
// is shown or fetched and after each selection change).
func (s *Session) refreshWorktreeNotice(ctx context.Context) {
	s.mu.Lock()
	sel, title, ws := s.selectionLocked(), "", s.row.Workspace
	wt := s.prop != nil && sel.Location == handoff.Worktree
	if wt {
		title = s.prop.Title
	}
	s.mu.Unlock()
	var w handoff.WorktreeCard
	if wt {
		edited, _ := s.m.st.EditedFiles(ctx, s.id)
		w = handoff.CheckWorktreeCard(ctx, ws, edited, sel, title)
	}
	s.mu.Lock()
	s.wt = w
	s.mu.Unlock()
}

// OpenApproval is [Session.Approval] for a client opening the card: the
// Worktree checks (uncommitted changes, the branch) run again first, so
// a branch created since the card was shown is named as a blocker.
func (s *Session) OpenApproval(ctx context.Context) ApprovalView {
	s.refreshWorktreeNotice(ctx)
	s.changed()
	return s.Approval()
}

// Approval returns the current card (Pending false when there is none).
// The files it reads (the plan, the skill folders) are read outside the
// session lock.
func (s *Session) Approval() ApprovalView {
	s.mu.Lock()
	st := handoff.CardState{Approval: s.approval, Models: s.m.modelConfig().Models, Fork: s.forkStateLocked()}
	if s.prop == nil {
		s.mu.Unlock()
		return ApprovalView{Card: handoff.NewCard(st)}
	}
	st.Proposal = &handoff.CardProposal{Title: s.prop.Title, Hash: s.prop.Hash, Path: agent.WorkScheme + s.prop.Path,
		Edited: s.prop.PersonEdited, Selection: s.selectionLocked(), Worktree: s.wt}
	p, workspace := *s.prop, s.row.Workspace
	s.mu.Unlock()
	v := ApprovalView{Card: handoff.NewCard(st)}
	if body, differs, err := s.proposalBody(p); err == nil {
		v.ShowBody(body, differs)
		v.Warnings = s.track.Warnings(p.Hash, body, workspace)
		s.versionCard(&v, p.Hash, body)
		v.Scope = s.track.CardScope(p.Hash, body)
	}
	v.Skills = handoff.FindSkills(handoff.SkillDirs(workspace, userConfigDir()))
	return v
}

func userConfigDir() string {
	d, _ := os.UserConfigDir()
	return d
}

// checkAttemptLocked fails closed on a stale or missing attempt id.
func (s *Session) checkAttemptLocked(attempt string) error {
	if err := s.approval.Check(attempt); err != nil {
		return errStale
	}
	return nil
}

// lockAttempt takes s.mu for an action on the card presented under
// attempt; a stale or missing one fails closed with the lock released.
func (s *Session) lockAttempt(attempt string) error {
	s.mu.Lock()
	if err := s.checkAttemptLocked(attempt); err != nil {
		s.mu.Unlock()
		return err
	}
	return nil
}

// UpdateSelection applies one card edit.
func (s *Session) UpdateSelection(ctx context.Context, attempt string, c handoff.Change) (ApprovalView, error) {
	if err := s.lockAttempt(attempt); err != nil {
		return ApprovalView{}, err
	}
	sel, err := s.selectionLocked().Apply(c, s.m.modelConfig().Models)
	if err != nil {
		s.mu.Unlock()
		return ApprovalView{}, &Error{Code: CodeInvalidSelect, Message: err.Error()}
	}
	p := *s.prop
	p.Selection = sel.Stored()
	s.armTimeoutLocked() // the person is deciding: the timeout starts over
	s.mu.Unlock()
	if err := s.putProposal(ctx, p); err != nil {
		return ApprovalView{}, err
	}
	s.refreshWorktreeNotice(ctx)
	s.changed()
	return s.Approval(), nil
}

// SetHidden hides or re-shows the card; it stays pending either way.
func (s *Session) SetHidden(attempt string, hidden bool) (ApprovalView, error) {
	if err := s.lockAttempt(attempt); err != nil {
		return ApprovalView{}, err
	}
	s.approval.Hidden = hidden
	s.mu.Unlock()
	s.changed() // shown or hidden
	return s.Approval(), nil
}

// closeApproval ends the presentation (under s.mu).
func (s *Session) closeApprovalLocked() string {
	a := s.approval.Attempt
	s.approval = handoff.Approval{}
	s.timeout.Stop()
	return a
}

// CancelApproval demotes the proposal to a draft and discards the selection.
func (s *Session) CancelApproval(ctx context.Context, attempt string) error {
	if err := s.lockAttempt(attempt); err != nil {
		return err
	}
	a := s.closeApprovalLocked()
	p := *s.prop
	p.Status, p.Selection = ProposalDraft, ""
	s.mu.Unlock()
	if err := s.putProposal(ctx, p); err != nil {
		return err
	}
	s.closedWith(ctx, a, handoff.OutcomeCancelled, &p)
	s.changed()
	s.kick()
	return nil
}

// Comment is a remark anchored to a line of the proposal.
type Comment = handoff.LineComment

// Feedback sends the person's revision request to the model inside a
// delimited envelope. Plan stays on; the selection survives.
func (s *Session) Feedback(ctx context.Context, attempt, text string, comments []Comment) error {
	if n := handoff.FeedbackSize(text, comments); n > MaxPromptBytes {
		return errorf(CodePromptTooLarge, "the feedback is %d bytes; the limit is %d (1 MiB)", n, MaxPromptBytes)
	}
	text, comments = handoff.MaskFeedback(text, comments, s.m.redact.String)
	if err := s.lockAttempt(attempt); err != nil {
		return err
	}
	body := s.prop.Body
	if body == "" && len(comments) > 0 {
		b, _ := os.ReadFile(s.workPath(s.prop.Path))
		body = string(b)
	}
	feedback := handoff.FeedbackText(text, body, comments)
	if strings.TrimSpace(feedback) == "" {
		s.mu.Unlock()
		return errorf(CodeInvalidParams, "feedback is empty")
	}
	a := s.closeApprovalLocked()
	p := *s.prop
	p.Status = ProposalDraft
	p.Rejections++
	title := p.Title
	s.mu.Unlock()
	if len(comments) > 0 {
		if err := s.saveComments(p.Hash, comments); err != nil {
			s.m.log.Error("save plan comments", "session", s.id, "err", err)
		}
	}
	if err := s.putProposal(ctx, p); err != nil {
		return err
	}
	s.closedWith(ctx, a, handoff.OutcomeFeedback, &p)
	prompt, display := handoff.FeedbackTurn(title, feedback, p.Rejections, s.track.ChecksHint(p.Hash))
	s.enqueue(turnReq{text: prompt, display: display})
	return nil
}

// EditProposal replaces the proposal with the person's edited text, which is
// what will be accepted (recorded as person-edited). A new presentation
// starts.
func (s *Session) EditProposal(ctx context.Context, attempt, body string) (ApprovalView, error) {
	if err := s.lockAttempt(attempt); err != nil {
		return ApprovalView{}, err
	}
	s.mu.Unlock()
	body = strings.TrimSpace(strings.ReplaceAll(body, "\r\n", "\n"))
	if body == "" {
		return ApprovalView{}, errorf(CodeInvalidParams, "the edited plan is empty")
	}
	if err := s.publishProposal(ctx, proposal.Parse(body).Title, body, true); err != nil {
		return ApprovalView{}, err
	}
	return s.Approval(), nil
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
	c.p = *s.prop
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
	was, armed := s.approval, s.timeout.Armed()
	attempt = s.closeApprovalLocked()
	return attempt, func() {
		s.approval = was // hidden if it was
		if armed {
			s.armTimeoutLocked() // it starts over, as after a change of the card
		}
	}, nil
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
			base, err = s.stageBase(ctx, rec.Artifact.Hash, artifact, rec.Title, body)
			return err
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
		mine, prevTrack := s.startTrackingLocked(rec.Title, artifact, rec.Artifact.Hash, body, rec.Selection.Policy(), base)
		c.Tracking, c.Record = store.Tracking(s.track.Row()), rec.Marshal()
		return change{commit: func(ctx context.Context) error { return s.m.st.CommitAcceptance(ctx, c) },
			undo: func() {
				if undo != nil {
					undo()
				}
				s.track.Undo(mine, prevTrack) // a concurrent start that won keeps its own
			},
			// As committed; no later row commit writes Plan back on.
			done: func() { s.prop, s.row.Plan = &c.Proposal, false }}, nil
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
	s.m.baseCommitted(s.id, base)
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
		err := s.setImplStatus(ctx, ImplRunning, "")
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
	p := s.prop
	ws := s.row.Workspace
	s.mu.Unlock()
	if p == nil || p.Status != ProposalAccepted {
		return "", &Error{Code: CodeNoProposal, Message: "there is no accepted plan to save"}
	}
	body, err := s.readArtifact(handoff.ArtifactPath(p.Hash), p.Hash)
	if err != nil {
		return "", err
	}
	rel, err := handoff.SaveToProject(ws, date, p.Title, handoff.ArtifactData(body))
	return rel, refused(err)
}
