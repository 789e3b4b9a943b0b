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
	eng := s.engine()
	if eng == nil {
		return fmt.Errorf("no model engine is configured")
	}
	env := &handoffEnv{s: s}
	hist, err := env.History(ctx)
	if err != nil {
		return err
	}
	w := s.m.workload(WorkloadSummarization)
	if err := s.m.checkModel(w.Model); err != nil {
		return err
	}
	s.emit(event.Notice{Message: "Compacting the conversation..."})
	resp, err := eng.Stream(ctx, agent.Request{Model: w.Model, Effort: w.Effort, Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: handoff.CompactPrompt}, {Role: agent.RoleUser, Content: hist}}}, func(string) {})
	if err != nil {
		return err
	}
	var c handoff.Compaction
	if p := s.TrackedPlan(); p != nil && p.Status != ImplDone {
		c.Carry = p.Carry()
	}
	s.mu.Lock()
	if s.prop != nil && s.prop.Status == ProposalProposed {
		c.Proposal, c.ProposalPath = s.prop.Title, agent.WorkScheme+s.prop.Path
	}
	if s.row.Plan {
		c.Reminder = reminder(false)
	}
	s.mu.Unlock()
	material := handoff.CompactMaterial(resp.Text, c)
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
