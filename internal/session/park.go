package session

import (
	"context"
	"errors"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// CodeAlreadyStarted refuses a second start of a parked plan.
const CodeAlreadyStarted = "already_started"

// recordOutcome stores how attempt ended ([interaction.Card.RecordOutcome]).
func (s *Session) recordOutcome(ctx context.Context, attempt, outcome, title, hash string) {
	s.card.RecordOutcome(ctx, attempt, outcome, title, hash)
}

// Outcomes lists how the session's approval presentations ended, oldest first.
func (s *Session) Outcomes(ctx context.Context) ([]handoff.Outcome, error) {
	return s.card.Outcomes(ctx)
}

// --- Approval timeout -------------------------------------------------------

// SetApprovalTimeout sets how long an approval card may stay undecided
// (0, the default, never times out). It applies to cards presented from now.
func (m *Manager) SetApprovalTimeout(d time.Duration) { m.approvalTimeout.Set(d) }

// --- Approve and park ---------------------------------------------------------

// ParkedView is a parked plan as clients see it ([handoff.ParkedPlan]).
type ParkedView struct{ handoff.ParkedPlan }

func parkedView(p store.ParkedPlan) ParkedView {
	v := handoff.ParkedPlan{ID: p.ID, Session: p.SessionID, Title: p.Title, Hash: p.Hash, Artifact: agent.WorkScheme + p.Path,
		Head: p.Head, Branch: p.Branch, CreatedAt: p.CreatedAt, Location: p.StartedLocation}
	v.Selection, _ = handoff.ParkedSelection(p.Selection) // unreadable: shown empty, and it cannot start
	v.SetStarted(p.StartedAt)
	return ParkedView{v}
}

// Park approves the current proposal with the card's whole selection and
// starts nothing: the plan is archived immutably (the same archive an
// acceptance writes), recorded as parked with the selection and the
// workspace HEAD, and the card closes as parked. The proposal's status
// becomes parked; Plan stays as it is. Start it later with
// [Manager.StartParked].
func (s *Session) Park(ctx context.Context, attempt string) (ParkedView, error) {
	return s.ParkExpecting(ctx, attempt, nil)
}

// ParkExpecting is [Session.Park] that also refuses, atomically with the
// attempt check, unless the selection is *expect (nil: any): a browser page
// thus parks exactly the settings it showed. It is [handoff.Park] over
// this session.
func (s *Session) ParkExpecting(ctx context.Context, attempt string, expect *handoff.Selection) (ParkedView, error) {
	pp := &parking{card: card{handoffEnv: handoffEnv{s}, attempt: attempt}}
	if _, err := handoff.Park(ctx, pp, expect); err != nil {
		return ParkedView{}, refused(err)
	}
	s.emit(event.ApprovalClosed{Attempt: attempt, Reason: handoff.OutcomeParked})
	v := parkedView(pp.row) // as committed: a failed read never reports a committed park as failed
	s.emit(v)
	s.emit(event.Notice{Message: handoff.ParkedNotice(v.Title)})
	s.changed()
	s.kick()
	return v, nil
}

// parking is the session side of one [handoff.Park] ([handoff.ParkPort]).
type parking struct {
	card
	row store.ParkedPlan // the parked plan, once committed
}

// Commit: the parked plan, the proposal parked and the outcome, in one
// transaction (store.CommitPark); the first decision wins.
func (a *parking) Commit(ctx context.Context, pk handoff.Parking) error {
	s, p := a.s, a.p
	row := store.ParkedPlan{ID: newID("pp-"), SessionID: s.id, Title: pk.Title, Path: pk.Artifact.Path, Hash: pk.Artifact.Hash,
		Selection: pk.Selection.Stored(), Head: pk.Head, Branch: pk.Branch, CreatedAt: time.Now().UTC()}
	p.Status, p.Rejections = ProposalParked, 0
	err := s.commitChange(ctx, func() (change, error) {
		attempt, undo, err := a.closeLocked(pk.Selection)
		if err != nil {
			return change{}, err
		}
		park := store.Park{Plan: row, Proposal: p,
			Outcome: store.ApprovalOutcome{SessionID: s.id, Attempt: attempt, Outcome: handoff.OutcomeParked, Title: p.Title, Hash: p.Hash}}
		return change{commit: func(ctx context.Context) error { return s.m.st.CommitPark(ctx, park) },
			undo: undo, // nothing moved: the card stays pending
			done: func() { s.card.SetLocked(p) }}, nil
	})
	if err == nil {
		a.row = row
	}
	return err
}

// Parked lists parked plans not yet started: those of session, or of
// every session when session is empty; with all, started ones too.
func (m *Manager) Parked(ctx context.Context, session string, all bool) ([]ParkedView, error) {
	rows, err := m.st.ParkedPlans(ctx, session, all)
	if err != nil {
		return nil, err
	}
	out := make([]ParkedView, len(rows))
	for i, r := range rows {
		out[i] = parkedView(r)
	}
	return out, nil
}

// StartResult tells the client what starting a parked plan did.
type StartResult = handoff.StartResult

// StartParked starts parked plan id, Here or in a Worktree (location ""
// keeps the parked selection's; branch names the Worktree's branch),
// through the same durable handoff as an acceptance: one transaction marks
// it started (so it starts at most once), marks the session's proposal
// accepted, leaves Plan and writes the retry record; then the handoff
// runs. The archive is reused, never rewritten.
func (m *Manager) StartParked(ctx context.Context, id string, location handoff.Location, branch string) (StartResult, error) {
	row, err := m.st.GetParkedPlan(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return StartResult{}, errorf(CodeNotFound, "no parked plan %q", id)
	}
	if err != nil {
		return StartResult{}, err
	}
	if !row.StartedAt.IsZero() {
		return StartResult{}, &Error{Code: CodeAlreadyStarted, Message: store.ErrAlreadyStarted.Error()}
	}
	s, err := m.Get(ctx, row.SessionID)
	if err != nil {
		return StartResult{}, err
	}
	sel, err := handoff.ParkedSelection(row.Selection)
	if err != nil {
		return StartResult{}, refused(err)
	}
	pk := handoff.Parking{Selection: sel, Title: row.Title, Artifact: handoff.Artifact{Path: row.Path, Hash: row.Hash}, Head: row.Head, Branch: row.Branch}
	port := &starting{handoffEnv: handoffEnv{s}, id: row.ID}
	st, err := handoff.StartParked(ctx, port, pk, location, branch)
	port.release()
	if err != nil {
		return StartResult{}, refused(err)
	}
	return st.Result(s.id, agent.WorkScheme+row.Path), nil
}

// starting is the session side of one [handoff.StartParked]
// ([handoff.StartPort]) of parked plan id.
// One start at a time claims the session from its checks until its
// hand-over made the session busy (or it failed), so a second start in
// that moment is told the session is busy starting, not that a retry
// waits.
type starting struct {
	handoffEnv
	id      string
	claimed bool
}

func (a *starting) Claim() error {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	err := handoff.StartBlocker(handoff.StartState{ForkedTo: s.row.ForkedTo, Busy: s.busy, Starting: s.starting, Pending: s.card.PendingLocked()})
	if err == nil {
		s.starting, a.claimed = true, true
	}
	return err
}

func (a *starting) RecordWaiting(ctx context.Context) bool {
	_, err := a.s.m.st.GetRetryRecord(ctx, a.s.id)
	return err == nil
}

// release ends the claim of a start that made one.
func (a *starting) release() {
	if !a.claimed {
		return
	}
	a.s.mu.Lock()
	a.s.starting, a.claimed = false, false
	a.s.mu.Unlock()
}

// Commit: parked plan started, proposal accepted, Plan left, tracking,
// retry record — one transaction (store.CommitAcceptance with Parked).
func (a *starting) Commit(ctx context.Context, st handoff.Started, body string) error {
	s, rec := a.s, st.Record
	p := store.Proposal{SessionID: s.id, Status: ProposalAccepted, Title: rec.Title, Path: rec.Artifact.Path, Hash: rec.Artifact.Hash, Body: body,
		Selection: rec.Selection.Stored()}
	// The base is the workspace now, at the start, not at park time.
	base, err := s.commitAccepted(ctx, store.Acceptance{Proposal: p, Parked: a.id, ParkedLocation: string(rec.Selection.Location)}, rec, body,
		func() (func(), error) {
			if s.busy || s.card.PendingLocked() {
				return nil, errorf(CodeBusy, "the session became busy; try again")
			}
			return nil, nil
		})
	if errors.Is(err, store.ErrAlreadyStarted) {
		return &Error{Code: CodeAlreadyStarted, Message: err.Error()}
	}
	if err != nil {
		return err
	}
	var evs []EventData
	if st.Notice != "" {
		evs = append(evs, event.Notice{Message: st.Notice})
	}
	s.started(base, append(evs, event.ParkedStarted{ID: a.id, Location: rec.Selection.Location, StaleBase: st.StaleBase, Notice: st.Notice})...)
	return nil
}

// parkedText is the `/plan parked` notice ([handoff.ParkedList]).
func (m *Manager) parkedText(ctx context.Context, session string) string {
	ps, err := m.Parked(ctx, session, false)
	if err != nil {
		return "cannot list parked plans: " + err.Error()
	}
	list := make([]handoff.ParkedPlan, len(ps))
	for i, p := range ps {
		list[i] = p.ParkedPlan
	}
	return handoff.ParkedList(list)
}
