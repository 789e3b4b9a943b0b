package session

import (
	"context"
	"fmt"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
)

// Compact summarises the transcript into a new context segment, as the
// session's owning workflow.
func (s *Session) Compact() error {
	return s.own(func(ctx context.Context) func() {
		if err := s.compactNow(ctx, "requested"); err != nil {
			return func() { s.emit(event.Error{Message: "compaction failed: " + err.Error()}) }
		}
		return nil
	})
}

// compactNow replaces the current context with a summary. What must not be
// lost rides along verbatim: an accepted plan being implemented (title,
// finished count, remaining steps) and, in Plan, the reminder reference.
func (s *Session) compactNow(ctx context.Context, why string) error {
	hist, err := (&handoffEnv{s: s}).History(ctx)
	if err != nil {
		return err
	}
	summary, err := s.summarize(ctx, "Compacting the conversation...", handoff.CompactPrompt, hist)
	if err != nil {
		return err
	}
	var c handoff.Compaction
	if p := s.TrackedPlan(); p != nil && p.Status != ImplDone {
		c.Carry = p.Carry()
	}
	s.mu.Lock()
	if p, ok := s.card.ProposalLocked(); ok && p.Status == ProposalProposed {
		c.Proposal, c.ProposalPath = p.Title, agent.WorkScheme+p.Path
	}
	if s.row.Plan {
		c.Reminder = agent.PlanReminder(false)
	}
	s.mu.Unlock()
	material := handoff.CompactMaterial(summary, c)
	s.mu.Lock()
	seg := s.row.Segment + 1
	s.mu.Unlock()
	if err := s.tr.Rotate(ctx, seg, material, ""); err != nil {
		return err
	}
	s.emit(event.Compacted{Segment: seg, Reason: why, Chars: len(material)})
	return nil
}

// needsCompaction reports whether the next request (the current context
// and next) nears the model's window ([handoff.ModelConfig.NearWindow]).
func (s *Session) needsCompaction(next string) bool {
	return s.m.modelConfig().NearWindow(agent.ContextSize(s.tr.Messages(), next))
}

// summarize asks the summarization workload's model for input summarised
// under system, telling the person first (notice): for a compaction and
// for a handoff's Summary context.
func (s *Session) summarize(ctx context.Context, notice, system, input string) (string, error) {
	eng := s.engine()
	if eng == nil {
		return "", fmt.Errorf("no model engine is configured")
	}
	w := s.m.modelConfig().Workload(handoff.WorkloadSummarization)
	if err := s.m.modelConfig().Check(w.Model); err != nil {
		return "", err
	}
	s.emit(event.Notice{Message: notice})
	resp, err := eng.Stream(ctx, agent.Request{Model: w.Model, Effort: w.Effort, Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: system}, {Role: agent.RoleUser, Content: input}}}, func(string) {})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}
