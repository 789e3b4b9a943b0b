package session

import (
	"context"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/turn"
	"planbridge/proposal"
	"planbridge/review"
)

// newRunner is the executor of the session's turns (package internal/turn)
// over the session: its host is turnHost, its lock the aggregate's.
func (s *Session) newRunner(lastTurn int64) *turn.Runner {
	m := s.m
	return turn.New(turn.Config{Session: s.id, Lock: &s.mu, Host: turnHost{s}, Transcript: s.tr, Events: s.events, Store: m.st,
		LastTurn: lastTurn, Shell: m.shell, ReadRoots: m.read, Hidden: m.hide, WorkDir: s.workDir, UserDir: handoff.UserConfigDir, Logger: m.log})
}

// Compact summarises the transcript into a new context segment, as the
// session's owning workflow.
func (s *Session) Compact() error {
	return s.own(func(ctx context.Context) func() {
		if err := s.turns.Compact(ctx, "requested"); err != nil {
			return func() { s.emit(event.Error{Message: "compaction failed: " + err.Error()}) }
		}
		return nil
	})
}

// turnHost is the session's side of its turns ([turn.Host]).
type turnHost struct{ s *Session }

func (h turnHost) PostureLocked() turn.Posture {
	s := h.s
	p := turn.Posture{Plan: s.row.Plan, FullReminder: s.row.TemplateEpisode != s.row.PlanEpisode, PlanEpisode: s.row.PlanEpisode, Title: s.row.Title,
		Mode: s.row.Mode, Workspace: s.row.Workspace, Segment: s.row.Segment, Parent: s.row.ParentID}
	if pr, ok := s.card.ProposalLocked(); ok && pr.Status == ProposalProposed {
		p.Proposal, p.ProposalPath = pr.Title, agent.WorkScheme+pr.Path
	}
	return p
}

func (h turnHost) Engine() agent.Engine             { return h.s.m.Engine() }
func (h turnHost) ModelConfig() handoff.ModelConfig { return h.s.m.modelConfig() }
func (h turnHost) Tools() *agent.Registry           { return h.s.registry() }
func (h turnHost) Response(res *proposal.Result)    { h.s.card.OnResponse(res) }
func (h turnHost) AdmitGoal(req *turn.Req) string {
	return h.s.goal.Admit(&req.Goal, &req.Policy, &req.Text)
}

func (h turnHost) UnsentGoal(ctx context.Context, t goal.Turn, err error) {
	h.s.goal.Unsent(ctx, t, err)
}
func (h turnHost) Binding() turn.Tracking            { return h.s.track.Binding() }
func (h turnHost) PauseForScope(reason string)       { h.s.track.PauseForScope(reason) }
func (h turnHost) Edited(call agent.ToolCall)        { h.s.track.RecordEdit(call) }
func (h turnHost) Plan() *review.TrackedPlan         { return h.s.TrackedPlan() }
func (h turnHost) ReportIfEnded(ctx context.Context) { h.s.track.ReportIfEnded(ctx) }
func (h turnHost) Failpoint(name string)             { h.s.m.failpoint(name) }

func (h turnHost) CommitRow(ctx context.Context, set func(*store.Session)) error {
	return h.s.commitRow(ctx, set)
}

func (h turnHost) BookGoal(ctx context.Context, t goal.Turn, usage agent.Usage, wall time.Duration, err error) bool {
	return h.s.goal.Book(ctx, t, usage, wall, err)
}

func (h turnHost) Asker() agent.Asker { return h.s.asker() }

// asker is the person's permission prompt for this session's tool calls
// (nil: nobody can answer).
func (s *Session) asker() agent.Asker {
	s.m.mu.Lock()
	ask := s.m.asker
	s.m.mu.Unlock()
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, call agent.ToolCall, reason string) (bool, error) {
		return ask(ctx, s.id, call, reason)
	}
}

// RequeueFirst puts a Goal turn's retry at the head of the queue.
func (h turnHost) RequeueFirst(req turn.Req) {
	h.s.mu.Lock()
	h.s.queue = append([]turn.Req{req}, h.s.queue...)
	h.s.mu.Unlock()
}
