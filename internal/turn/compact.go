package turn

import (
	"context"
	"errors"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/review"
)

// Compact replaces the current context with a summary of it, a new
// segment committed as one [Transcript.Rotate]. What must not be lost
// rides along verbatim: an accepted plan being implemented (not done: its
// title, finished count, remaining steps), a pending proposal and, in
// Plan, the reminder reference. why is told with the compacted event.
func (r *Runner) Compact(ctx context.Context, why string) error {
	summary, err := r.Summarize(ctx, "Compacting the conversation...", handoff.CompactPrompt, History(r.cfg.Transcript.Messages()))
	if err != nil {
		return err
	}
	var c handoff.Compaction
	if p := r.cfg.Host.Plan(); p != nil && p.Status != review.ImplDone {
		c.Carry = p.Carry()
	}
	p := r.posture()
	if p.Proposal != "" {
		c.Proposal, c.ProposalPath = p.Proposal, p.ProposalPath
	}
	if p.Plan {
		c.Reminder = agent.PlanReminder(false)
	}
	material := handoff.CompactMaterial(summary, c)
	seg := p.Segment + 1
	if err := r.cfg.Transcript.Rotate(ctx, seg, material, ""); err != nil {
		return err
	}
	r.cfg.Events.Emit(event.Compacted{Segment: seg, Reason: why, Chars: len(material)})
	return nil
}

// NeedsCompaction reports whether the next request (the current context
// and next) nears the model's window ([handoff.ModelConfig.NearWindow]).
func (r *Runner) NeedsCompaction(next string) bool {
	return r.cfg.Host.ModelConfig().NearWindow(agent.ContextSize(r.cfg.Transcript.Messages(), next))
}

// Summarize asks the summarization workload's model for input summarised
// under system, telling the person first (notice): for a compaction and
// for a handoff's Summary context.
func (r *Runner) Summarize(ctx context.Context, notice, system, input string) (string, error) {
	eng := r.engine(r.posture())
	if eng == nil {
		return "", errors.New("no model engine is configured")
	}
	cfg := r.cfg.Host.ModelConfig()
	w := cfg.Workload(handoff.WorkloadSummarization)
	if err := cfg.Check(w.Model); err != nil {
		return "", err
	}
	r.cfg.Events.Emit(event.Notice{Message: notice})
	resp, err := eng.Stream(ctx, agent.Request{Model: w.Model, Effort: w.Effort, Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: system}, {Role: agent.RoleUser, Content: input}}}, func(string) {})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}

// History is [handoff.RenderHistory] of msgs: the conversation as a
// summary reads it.
func History(msgs []agent.Message) string {
	hs := make([]handoff.HistoryMessage, len(msgs))
	for i, m := range msgs {
		h := handoff.HistoryMessage{Role: m.Role, Name: m.Name, Content: m.Content}
		for _, c := range m.ToolCalls {
			h.Calls = append(h.Calls, handoff.HistoryCall{Name: c.Name, Arguments: string(c.Arguments)})
		}
		hs[i] = h
	}
	return handoff.RenderHistory(hs)
}
