package handoffport

import (
	"context"
	"path/filepath"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
	"planbridge/review"
)

// Accept is [handoff.Accept] of the card's attempt over this session:
// validate (with the Location expected, "" = any, checked atomically with
// the attempt), archive immutably, one commit (accepted, Plan left,
// tracking, retry record), then the handoff runs as the session's root
// workflow.
func (p *Ports) Accept(ctx context.Context, attempt, branch string, expect handoff.Location) (handoff.AcceptResult, error) {
	rec, err := handoff.Accept(ctx, p.Acceptance(attempt), branch, expect)
	if err != nil {
		return handoff.AcceptResult{}, err
	}
	return handoff.Accepted(agent.WorkScheme + rec.Artifact.Path), nil
}

// Acceptance is the port of one [handoff.Accept] of attempt.
func (p *Ports) Acceptance(attempt string) handoff.AcceptPort {
	return &acceptance{card: card{env: env{p}, attempt: attempt}}
}

// card is the session side of the card one [handoff.Accept] or
// [handoff.Park] decides ([handoff.CardPort]): its attempt and proposal.
type card struct {
	env
	attempt string
	prop    store.Proposal // presented; once committed, as committed
}

// Presented: a refusal leaves the card pending.
func (c *card) Presented(ctx context.Context) (handoff.Presented, error) {
	cfg := c.p.cfg
	cfg.Lock.Lock()
	defer cfg.Lock.Unlock()
	if err := cfg.Card.CheckLocked(c.attempt); err != nil {
		return handoff.Presented{}, err
	}
	c.prop, _ = cfg.Card.ProposalLocked() // pending: there is one
	return handoff.Presented{Selection: cfg.Card.SelectionLocked(), Title: c.prop.Title, Hash: c.prop.Hash}, nil
}

func (c *card) Body(ctx context.Context) (string, error) {
	body, _, err := c.p.cfg.Card.Body(c.prop)
	return body, err
}

// Archive writes into the session's directory: refused once it is deleted.
func (c *card) Archive(ctx context.Context, art handoff.Artifact, body string) error {
	return c.p.cfg.Host.WhileLive(func() error {
		_, err := store.WriteFileOnceIn(filepath.Dir(filepath.Clean(c.p.cfg.WorkDir)), c.p.workPath(art.Path), handoff.ArtifactData(body), 0o444) // below the session's directory, never creating it
		return err
	})
}

// closeLocked is the decision of the card's commit, under the lock: the
// first decision wins and the selection is still sel; it closes the card,
// and undo reopens it as it was (shown or hidden, its timeout armed
// again) when the commit fails (nothing moved).
func (c *card) closeLocked(sel handoff.Selection) (attempt string, undo func(), err error) {
	cd := c.p.cfg.Card
	if err := cd.CheckLocked(c.attempt); err != nil {
		return "", nil, err
	}
	if cur := cd.SelectionLocked(); !cur.SameSettings(sel) {
		return "", nil, handoff.ErrSettingsChanged
	}
	attempt = cd.CloseLocked()
	return attempt, func() { cd.ReopenLocked(attempt) }, nil
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
	pr := a.prop
	pr.Status, pr.Rejections = interaction.Accepted, 0
	base, err := a.p.commitAccepted(ctx, store.Acceptance{Proposal: pr}, rec, in.Body, func() (undo func(), err error) {
		a.closed, undo, err = a.closeLocked(in.Selection)
		return undo, err
	})
	if err == nil {
		a.prop, a.base = pr, base
	}
	return err
}

// Committed: the card closed as accepted (its outcome recorded, its
// selection riding along, so the transcript records what the
// implementation runs with), the start announced.
func (a *acceptance) Committed(ctx context.Context, rec *handoff.Record, in handoff.Accepting) {
	sel := in.Selection
	a.p.cfg.Card.RecordOutcome(ctx, a.closed, handoff.OutcomeAccepted, a.prop.Title, a.prop.Hash)
	a.p.cfg.Host.Emit(event.ApprovalClosed{Attempt: a.closed, Reason: handoff.OutcomeAccepted, Selection: &sel})
	a.p.started(a.base)
}

// commitAccepted is the one commit that starts an implementation
// (store.CommitAcceptance: c with the session leaving Plan, the plan's
// tracking and rec) for an acceptance and a parked plan's start alike.
// The base is staged before the commit names it (a Worktree
// implementation's is its fork's, staged at the hand-over); then, under
// the lock, decide (which refuses, changing nothing, or returns how to
// undo it, nil for nothing) and the tracking begins, in one critical
// section; a failed commit undoes both, one that succeeds leaves the
// session on c.Proposal, out of Plan. A deleted session's is refused,
// nothing staged or written ([Host.WhileLive]).
func (p *Ports) commitAccepted(ctx context.Context, c store.Acceptance, rec *handoff.Record, body string, decide func() (undo func(), err error)) (base string, err error) {
	artifact, h, track := agent.WorkScheme+rec.Artifact.Path, p.cfg.Host, p.cfg.Track
	if rec.Selection.Location != handoff.Worktree {
		// Into the session's directory: refused once it is deleted.
		if err := h.WhileLive(func() (err error) {
			base, err = track.StageBase(ctx, rec.Artifact.Hash, artifact, rec.Title, body)
			return err
		}); err != nil {
			return "", err
		}
	}
	err = h.Commit(ctx, func() (Change, error) {
		undo, err := decide()
		if err != nil {
			return Change{}, err
		}
		c.Session = h.RowLocked()
		c.Session.Plan = false
		mine, prevTrack := track.StartLocked(review.Accepted{Title: rec.Title, Artifact: artifact, Hash: rec.Artifact.Hash, Body: body, Policy: rec.Selection.Policy(), Base: base})
		c.Tracking, c.Record = store.Tracking(track.Row()), rec.Marshal()
		return Change{Commit: func(ctx context.Context) error { return p.cfg.Store.CommitAcceptance(ctx, c) },
			Undo: func() {
				if undo != nil {
					undo()
				}
				track.UndoLocked(mine, prevTrack) // a concurrent start that won keeps its own
			},
			// As committed; no later row commit writes Plan back on.
			Done: func() {
				p.cfg.Card.SetLocked(c.Proposal)
				h.SetRowLocked(func(r *store.Session) { r.Plan = false })
			}}, nil
	})
	if err != nil {
		return "", err
	}
	return base, nil
}

// started announces an implementation whose start committed naming base:
// the base pointed at ([review.BaseCommitted]), the plan's steps, evs,
// the preparing notice, the views.
func (p *Ports) started(base string, evs ...event.Data) {
	p.cfg.Track.BaseCommitted(base)
	p.cfg.Track.EmitSteps()
	for _, ev := range evs {
		p.cfg.Host.Emit(ev)
	}
	p.cfg.Host.Emit(event.Notice{Message: handoff.PreparingNotice})
	p.cfg.Host.Changed()
}

// startHandoff runs the pipeline as the session's owning workflow.
func (p *Ports) startHandoff(rec *handoff.Record) error {
	h := p.cfg.Host
	return h.Own(func(ctx context.Context) func() {
		// The implementation is in flight again (it may have been paused by
		// a restart): one recovery path, so no second one applies.
		err := p.cfg.Track.SetStatus(ctx, review.ImplRunning, "")
		if err == nil {
			h.Emit(event.Handoff{State: "started", Step: rec.Step})
			err = handoff.Run(ctx, env{p}, rec)
		}
		if err != nil {
			msg := handoff.StoppedMessage(rec, err)
			return func() {
				h.Emit(event.Handoff{State: "failed", Step: rec.Step, Reason: rec.Reason})
				h.Emit(event.Error{Message: msg})
			}
		}
		// The report names the plan it implemented (provenance).
		ref := (&review.TrackedPlan{Title: rec.Title, Hash: rec.Artifact.Hash}).Ref()
		return func() {
			h.Emit(event.Handoff{State: "done", Plan: &event.HandoffPlan{Title: ref.Title, Hash: ref.Hash, Trailer: ref.Trailer}})
		}
	})
}

// SavePlan copies the last accepted plan into the workspace
// ([handoff.SaveToProject]) and returns its workspace-relative path. A
// failure is a [handoff.CodeSaveFailed] refusal naming no absolute path;
// without an accepted plan, a [CodeNoProposal] one.
func (p *Ports) SavePlan(ctx context.Context, date string) (string, error) {
	p.cfg.Lock.Lock()
	pr, ok := p.cfg.Card.ProposalLocked()
	ws := p.cfg.Host.RowLocked().Workspace
	p.cfg.Lock.Unlock()
	if !ok || pr.Status != interaction.Accepted {
		return "", refusal(CodeNoProposal, "there is no accepted plan to save")
	}
	body, err := handoff.ReadArtifact(p.cfg.WorkDir, handoff.ArtifactPath(pr.Hash), pr.Hash)
	if err != nil {
		return "", err
	}
	return handoff.SaveToProject(ws, date, pr.Title, handoff.ArtifactData(body))
}
