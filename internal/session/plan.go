package session

import (
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/interaction"
	"planbridge/internal/turn"
)

// Proposal statuses ([interaction]'s).
const (
	ProposalNone     = "none"
	ProposalProposed = interaction.Proposed
	ProposalDraft    = interaction.Draft
	// ProposalParked: approved and archived with its selection, not
	// started (see [Session.Park]).
	ProposalParked   = interaction.Parked
	ProposalAccepted = interaction.Accepted
)

// registry returns the tools this session's turns are offered.
func (s *Session) registry() *agent.Registry {
	tools := append(agent.DefaultTools(), s.track.Tools()...)
	return agent.NewRegistry(append(tools, s.goal.Tools()...)...)
}

// newCard is the session's interactions part, guarded by s.mu, over the
// store and cardHost.
func (s *Session) newCard() *interaction.Card {
	return interaction.New(interaction.Config{Session: s.id, WorkDir: s.workDir, Lock: &s.mu, Store: s.m.st,
		Host: cardHost{s}, Tracker: s.track, Mask: s.m.redact.String, MaxFeedback: MaxPromptBytes, Logger: s.m.log,
		Live: s.whileLive})
}

// cardHost is the session as its card sees it ([interaction.Host]).
type cardHost struct{ s *Session }

func (h cardHost) PlanLocked() bool { return h.s.row.Plan }

func (h cardHost) DefaultsLocked() handoff.Selection {
	cfg := h.s.m.modelConfig()
	return handoff.Defaults(h.s.row.Mode, cfg.GoalBudget, cfg.Workload(handoff.WorkloadImplementation))
}

func (h cardHost) CardLocked() ([]handoff.Model, handoff.ForkState, string) {
	return h.s.m.modelConfig().Models, h.s.forkStateLocked(), h.s.row.Workspace
}

func (h cardHost) Timeout() time.Duration { return h.s.m.approvalTimeout.Duration() }
func (h cardHost) Closed() bool           { return h.s.m.isClosed() }
func (h cardHost) Emit(ev event.Data)     { h.s.emit(ev) }
func (h cardHost) Changed()               { h.s.changed() }
func (h cardHost) Kick()                  { h.s.kick() }
func (h cardHost) Enqueue(prompt, display string) {
	h.s.enqueue(turn.Req{Text: prompt, Display: display})
}

// readArtifact is [handoff.ReadArtifact] in the session's work:// directory.
func (s *Session) readArtifact(rel, hash string) (string, error) {
	return handoff.ReadArtifact(s.workDir, rel, hash)
}
