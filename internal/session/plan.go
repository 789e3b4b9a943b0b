package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/trackbind"
	"planbridge/proposal"
)

// Proposal statuses.
const (
	ProposalNone     = "none"
	ProposalProposed = "proposed"
	ProposalDraft    = "draft"
	// ProposalParked: approved and archived with its selection, not
	// started (see [Session.Park]).
	ProposalParked   = "parked"
	ProposalAccepted = "accepted"
)

// registry returns the tools this session's turns are offered.
func (s *Session) registry() *agent.Registry {
	tools := append(agent.DefaultTools(), trackbind.Tools(s.track)...)
	return agent.NewRegistry(append(tools, s.goalTools()...)...)
}

// onResponse examines the extraction of one completed root-assistant
// response (nil: a response outside Plan, which cannot propose; tool
// output never reaches here).
func (s *Session) onResponse(res *proposal.Result) {
	if res == nil {
		return
	}
	for _, d := range res.Diagnostics {
		s.emit(event.Diagnostic{Level: string(d.Kind), Message: d.Message})
	}
	if res.Proposal == nil {
		return
	}
	if err := s.publishProposal(context.Background(), res.Proposal.Title, res.Proposal.Body, false); err != nil {
		s.m.log.Error("publish proposal", "session", s.id, "err", err)
		s.emit(event.Error{Message: "could not save the proposal: " + err.Error()})
	}
}

// publishProposal makes body the session's one actionable proposal: the
// artifact is written atomically first, then the metadata row points at it.
// The selection of an earlier proposal survives.
func (s *Session) publishProposal(ctx context.Context, title, body string, edited bool) error {
	hash := proposal.HashBody(body)
	if err := store.WriteFileAtomic(s.workPath(handoff.CurrentPlan), handoff.ArtifactData(body), 0o644); err != nil {
		return err
	}
	if err := s.track.RecordVersion(hash, body); err != nil {
		return fmt.Errorf("keep the plan version: %w", err)
	}
	s.mu.Lock()
	p := store.Proposal{SessionID: s.id}
	if s.prop != nil {
		p = *s.prop
	}
	p.Status, p.Title, p.Path, p.Hash, p.Body, p.PersonEdited = ProposalProposed, title, handoff.CurrentPlan, hash, body, edited
	s.mu.Unlock()
	if err := s.putProposal(ctx, p); err != nil {
		return err
	}
	s.emit(event.Proposal{Title: title, Body: body, Hash: hash,
		Path: agent.WorkScheme + handoff.CurrentPlan, Text: proposal.RenderText(body), Edited: edited})
	s.presentApproval(ctx)
	return nil
}

// putProposal persists p and makes it the session's proposal. On error
// the session keeps the proposal it had.
func (s *Session) putProposal(ctx context.Context, p store.Proposal) error {
	if err := s.m.st.PutProposal(ctx, p); err != nil {
		return err
	}
	s.mu.Lock()
	s.prop = &p
	s.mu.Unlock()
	return nil
}

// demoteProposal turns an actionable proposal into a draft, keeping its
// selection, and closes its card with outcome (demoted: a follow-up in
// Plan; cancelled: leaving Plan).
func (s *Session) demoteProposal(ctx context.Context, outcome string) {
	s.mu.Lock()
	actionable := s.prop != nil && s.prop.Status == ProposalProposed
	var p store.Proposal
	if actionable {
		p = *s.prop
		p.Status = ProposalDraft
	}
	a := s.closeApprovalLocked()
	s.mu.Unlock()
	if a != "" {
		s.closedWith(ctx, a, outcome, &p)
	}
	if !actionable {
		return
	}
	if err := s.putProposal(ctx, p); err != nil {
		s.m.log.Error("demote proposal", "session", s.id, "err", err)
	}
}

// loadProposal restores the proposal row and applies the resume rule: it
// stays actionable only if Plan is on, it was proposed, and the artifact
// still matches its recorded hash; otherwise it is demoted to a draft.
func (s *Session) loadProposal(ctx context.Context) error {
	p, err := s.m.st.GetProposal(ctx, s.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s.prop = &p
	if p.Status != ProposalProposed {
		return nil
	}
	if _, err := s.readArtifact(p.Path, p.Hash); s.row.Plan && err == nil {
		// Resume re-presents it (hidden state is not persisted).
		s.approval = handoff.Approval{Attempt: handoff.NewAttemptID()}
		return nil
	}
	p.Status = ProposalDraft
	s.prop = &p
	return s.m.st.PutProposal(ctx, p)
}

// workPath maps a session-relative artifact path to its file.
func (s *Session) workPath(rel string) string {
	return filepath.Join(s.workDir, filepath.FromSlash(rel))
}

// readArtifact is [handoff.ReadArtifact] in the session's work:// directory.
func (s *Session) readArtifact(rel, hash string) (string, error) {
	return handoff.ReadArtifact(s.workDir, rel, hash)
}

// proposalBody is [handoff.ProposalBody] of p.
func (s *Session) proposalBody(p store.Proposal) (body string, differs bool, err error) {
	return handoff.ProposalBody(s.workDir, p.Path, p.Hash, p.Body)
}
