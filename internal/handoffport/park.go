package handoffport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
)

// ParkedView is a parked plan as clients see it ([handoff.ParkedPlan]),
// and as a "parked" event.
type ParkedView struct{ handoff.ParkedPlan }

// Kind makes a parked plan an event ("parked").
func (ParkedView) Kind() string { return event.KindParked }

// Parked is the view of a stored parked plan; a selection that does not
// read is shown empty (and the plan cannot start).
func Parked(p store.ParkedPlan) ParkedView {
	v := handoff.ParkedPlan{ID: p.ID, Session: p.SessionID, Title: p.Title, Hash: p.Hash, Artifact: agent.WorkScheme + p.Path,
		Head: p.Head, Branch: p.Branch, CreatedAt: p.CreatedAt, Location: p.StartedLocation}
	v.Selection, _ = handoff.ParkedSelection(p.Selection)
	v.SetStarted(p.StartedAt)
	return ParkedView{v}
}

// ParkedStore is what the listing and the start of parked plans read.
type ParkedStore interface {
	ParkedPlans(ctx context.Context, session string, all bool) ([]store.ParkedPlan, error)
	GetParkedPlan(ctx context.Context, id string) (store.ParkedPlan, error)
}

// ListParked lists parked plans not yet started: those of session, or of
// every session when session is empty; with all, started ones too.
func ListParked(ctx context.Context, st ParkedStore, session string, all bool) ([]ParkedView, error) {
	rows, err := st.ParkedPlans(ctx, session, all)
	if err != nil {
		return nil, err
	}
	out := make([]ParkedView, len(rows))
	for i, r := range rows {
		out[i] = Parked(r)
	}
	return out, nil
}

// ParkedText is the `/plan parked` notice of session ([handoff.ParkedList]).
func ParkedText(ctx context.Context, st ParkedStore, session string) string {
	ps, err := ListParked(ctx, st, session, false)
	if err != nil {
		return "cannot list parked plans: " + err.Error()
	}
	list := make([]handoff.ParkedPlan, len(ps))
	for i, p := range ps {
		list[i] = p.ParkedPlan
	}
	return handoff.ParkedList(list)
}

// Park is [handoff.Park] of the card's attempt over this session (the
// whole selection expected, nil: any, checked atomically with the
// attempt): archived, one commit (the parked plan, the proposal parked,
// the outcome), the card closed as parked, announced; nothing starts.
func (p *Ports) Park(ctx context.Context, attempt string, expect *handoff.Selection) (ParkedView, error) {
	pp := p.Parking(attempt).(*parking)
	if _, err := handoff.Park(ctx, pp, expect); err != nil {
		return ParkedView{}, err
	}
	h := p.cfg.Host
	h.Emit(event.ApprovalClosed{Attempt: attempt, Reason: handoff.OutcomeParked})
	v := Parked(pp.row) // as committed: a failed read never reports a committed park as failed
	h.Emit(v)
	h.Emit(event.Notice{Message: handoff.ParkedNotice(v.Title)})
	h.Changed()
	h.Kick()
	return v, nil
}

// Parking is the port of one [handoff.Park] of attempt.
func (p *Ports) Parking(attempt string) handoff.ParkPort {
	return &parking{card: card{env: env{p}, attempt: attempt}}
}

// parking is the session side of one [handoff.Park] ([handoff.ParkPort]).
type parking struct {
	card
	row store.ParkedPlan // the parked plan, once committed
}

// Commit: the parked plan, the proposal parked and the outcome, in one
// transaction (store.CommitPark); the first decision wins.
func (a *parking) Commit(ctx context.Context, pk handoff.Parking) error {
	cfg, pr := a.p.cfg, a.prop
	row := store.ParkedPlan{ID: cfg.NewID("pp-"), SessionID: cfg.Session, Title: pk.Title, Path: pk.Artifact.Path, Hash: pk.Artifact.Hash,
		Selection: pk.Selection.Stored(), Head: pk.Head, Branch: pk.Branch, CreatedAt: time.Now().UTC()}
	pr.Status, pr.Rejections = interaction.Parked, 0
	err := cfg.Host.Commit(ctx, func() (Change, error) {
		attempt, undo, err := a.closeLocked(pk.Selection)
		if err != nil {
			return Change{}, err
		}
		park := store.Park{Plan: row, Proposal: pr,
			Outcome: store.ApprovalOutcome{SessionID: cfg.Session, Attempt: attempt, Outcome: handoff.OutcomeParked, Title: pr.Title, Hash: pr.Hash}}
		return Change{Commit: func(ctx context.Context) error { return cfg.Store.CommitPark(ctx, park) },
			Undo: undo, // nothing moved: the card stays pending
			Done: func() { cfg.Card.SetLocked(pr) }}, nil
	})
	if err == nil {
		a.row = row
	}
	return err
}

// StartParked starts parked plan id, Here or in a Worktree (location ""
// keeps the parked selection's; branch names the Worktree's branch), in
// the session open returns for it, through the same durable handoff as
// an acceptance ([handoff.StartParked]): one transaction marks it
// started (so it starts at most once), marks the session's proposal
// accepted, leaves Plan and writes the retry record; then the handoff
// runs. The archive is reused, never rewritten. An unknown plan is a
// [CodeNotFound] refusal, one started already [CodeAlreadyStarted].
func StartParked(ctx context.Context, st ParkedStore, open func(ctx context.Context, session string) (*Ports, error), id string, location handoff.Location, branch string) (handoff.StartResult, error) {
	row, err := st.GetParkedPlan(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return handoff.StartResult{}, refusal(CodeNotFound, fmt.Sprintf("no parked plan %q", id))
	}
	if err != nil {
		return handoff.StartResult{}, err
	}
	if !row.StartedAt.IsZero() {
		return handoff.StartResult{}, refusal(CodeAlreadyStarted, store.ErrAlreadyStarted.Error())
	}
	p, err := open(ctx, row.SessionID)
	if err != nil {
		return handoff.StartResult{}, err
	}
	sel, err := handoff.ParkedSelection(row.Selection)
	if err != nil {
		return handoff.StartResult{}, err
	}
	pk := handoff.Parking{Selection: sel, Title: row.Title, Artifact: handoff.Artifact{Path: row.Path, Hash: row.Hash}, Head: row.Head, Branch: row.Branch}
	port := p.Starting(row.ID)
	res, err := handoff.StartParked(ctx, port, pk, location, branch)
	port.Release()
	if err != nil {
		return handoff.StartResult{}, err
	}
	return res.Result(p.cfg.Session, agent.WorkScheme+row.Path), nil
}

// Start is the port of one [handoff.StartParked] of a parked plan
// ([handoff.StartPort]). One start at a time claims the session from its
// checks until its hand-over made the session busy (or it failed), so a
// second start in that moment is told the session is busy starting, not
// that a retry waits; [Start.Release] ends the claim of a start that
// made one.
type Start struct {
	env
	id      string
	claimed bool
}

// Starting is the port of one start of parked plan id.
func (p *Ports) Starting(id string) *Start { return &Start{env: env{p}, id: id} }

func (a *Start) Claim() error {
	cfg := a.p.cfg
	cfg.Lock.Lock()
	defer cfg.Lock.Unlock()
	err := handoff.StartBlocker(handoff.StartState{ForkedTo: cfg.Host.RowLocked().ForkedTo, Busy: cfg.Host.BusyLocked(), Starting: a.p.starting,
		Pending: cfg.Card.PendingLocked()})
	if err == nil {
		a.p.starting, a.claimed = true, true
	}
	return err
}

func (a *Start) RecordWaiting(ctx context.Context) bool {
	_, err := a.p.cfg.Store.GetRetryRecord(ctx, a.p.cfg.Session)
	return err == nil
}

// Release ends the claim of a start that made one.
func (a *Start) Release() {
	if !a.claimed {
		return
	}
	a.p.cfg.Lock.Lock()
	a.p.starting, a.claimed = false, false
	a.p.cfg.Lock.Unlock()
}

// Commit: parked plan started, proposal accepted, Plan left, tracking,
// retry record — one transaction (store.CommitAcceptance with Parked).
func (a *Start) Commit(ctx context.Context, st handoff.Started, body string) error {
	p, rec := a.p, st.Record
	pr := store.Proposal{SessionID: p.cfg.Session, Status: interaction.Accepted, Title: rec.Title, Path: rec.Artifact.Path, Hash: rec.Artifact.Hash, Body: body,
		Selection: rec.Selection.Stored()}
	// The base is the workspace now, at the start, not at park time.
	base, err := p.commitAccepted(ctx, store.Acceptance{Proposal: pr, Parked: a.id, ParkedLocation: string(rec.Selection.Location)}, rec, body,
		func() (func(), error) {
			if p.cfg.Host.BusyLocked() || p.cfg.Card.PendingLocked() {
				return nil, refusal(CodeBusy, "the session became busy; try again")
			}
			return nil, nil
		})
	if errors.Is(err, store.ErrAlreadyStarted) {
		return refusal(CodeAlreadyStarted, err.Error())
	}
	if err != nil {
		return err
	}
	var evs []event.Data
	if st.Notice != "" {
		evs = append(evs, event.Notice{Message: st.Notice})
	}
	p.started(base, append(evs, event.ParkedStarted{ID: a.id, Location: rec.Selection.Location, StaleBase: st.StaleBase, Notice: st.Notice})...)
	return nil
}
