package session

import (
	"context"
	"encoding/json"
	"fmt"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/review"
)

// The tracked plan and the todo list are package review's
// ([review.TrackedPlan], [review.ValidateTodos]); these names keep the
// session's callers reading as before.
type (
	TodoItem    = review.TodoItem
	PlanStep    = review.PlanStep
	TrackedPlan = review.TrackedPlan
	PlanRef     = review.PlanRef
)

// Todo list limits and statuses, plan step and implementation statuses.
const (
	MaxTodos       = review.MaxTodos
	MaxTodoChars   = review.MaxTodoChars
	TodoPending    = review.TodoPending
	TodoInProgress = review.TodoInProgress
	TodoCompleted  = review.TodoCompleted
	StepPending    = review.StepPending
	StepInProgress = review.StepInProgress
	StepCompleted  = review.StepCompleted
	StepBlocked    = review.StepBlocked
	StepSkipped    = review.StepSkipped
	ImplRunning    = review.ImplRunning
	ImplPaused     = review.ImplPaused
	ImplDone       = review.ImplDone
)

// Forwarders of package review's tracking functions.
var (
	ValidateTodos     = review.ValidateTodos
	RenderTodos       = review.RenderTodos
	StepsFromProposal = review.StepsFromProposal
	Gerund            = review.Gerund
)

// tracking state of a session (guarded by s.mu).
type tracking struct {
	todos []TodoItem
	plan  *TrackedPlan
}

func (s *Session) loadTracking(ctx context.Context) error {
	t, err := s.m.st.GetTracking(ctx, s.id)
	if err != nil {
		return err
	}
	if t.Todos != "" {
		if err := json.Unmarshal([]byte(t.Todos), &s.track.todos); err != nil {
			s.m.log.Warn("corrupt todo list; starting empty", "session", s.id, "err", err)
			s.track.todos = nil
		}
	}
	if t.Plan != "" {
		var p TrackedPlan
		if err := json.Unmarshal([]byte(t.Plan), &p); err != nil {
			s.m.log.Warn("corrupt plan progress; dropped", "session", s.id, "err", err)
		} else {
			if p.Status == ImplRunning && s.restarted {
				// A restart never forgets an implementation in flight: it pauses.
				p.Status, p.Reason = ImplPaused, "paused by restart"
				s.track.plan = &p
				return s.saveTracking(ctx)
			}
			s.track.plan = &p
		}
	}
	return nil
}

func (s *Session) trackingRow() store.Tracking {
	s.mu.Lock()
	defer s.mu.Unlock()
	todos, _ := json.Marshal(s.track.todos)
	if s.track.todos == nil {
		todos = []byte("[]")
	}
	plan := ""
	if s.track.plan != nil {
		b, _ := json.Marshal(s.track.plan)
		plan = string(b)
	}
	return store.Tracking{Todos: string(todos), Plan: plan}
}

func (s *Session) saveTracking(ctx context.Context) error {
	return s.m.st.PutTracking(ctx, s.id, s.trackingRow())
}

// Todos returns the current todo list.
func (s *Session) Todos() []TodoItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]TodoItem(nil), s.track.todos...)
}

// WriteTodos replaces the whole todo list after validating all of it; a
// rejected write leaves the previous list untouched. An empty list clears.
func (s *Session) WriteTodos(ctx context.Context, items []TodoItem) ([]TodoItem, error) {
	valid, err := ValidateTodos(items)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	prev := s.track.todos
	s.track.todos = valid
	s.mu.Unlock()
	if err := s.saveTracking(ctx); err != nil {
		s.mu.Lock()
		s.track.todos = prev
		s.mu.Unlock()
		return nil, err
	}
	s.emit(TodoEvent{Items: valid})
	return valid, nil
}

// Plan returns a copy of the tracked plan (nil if none).
func (s *Session) TrackedPlan() *TrackedPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.track.plan == nil {
		return nil
	}
	p := *s.track.plan
	p.Steps = append([]PlanStep(nil), p.Steps...)
	return &p
}

func (s *Session) emitSteps() {
	if p := s.TrackedPlan(); p != nil {
		s.emit(StepsEvent{TrackedPlan: p})
	}
}

// UpdateStep sets one step's status (by id like "s2" or 1-based number).
func (s *Session) UpdateStep(ctx context.Context, step, status string) (*TrackedPlan, error) {
	s.mu.Lock()
	p := s.track.plan
	if p == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("there is no accepted plan with steps to update")
	}
	err := p.SetStep(step, status)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := s.saveTracking(ctx); err != nil {
		return nil, err
	}
	s.emitSteps()
	return s.TrackedPlan(), nil
}

// startTracking installs the steps of an accepted plan (running).
func (s *Session) startTrackingLocked(title, artifact, hash, body string, policy handoff.Policy, base string) {
	steps, clipped := StepsFromProposal(body)
	s.track.plan = &TrackedPlan{Title: title, Artifact: artifact, Hash: hash, Status: ImplRunning, Policy: policy, Steps: steps, Clipped: clipped, Base: base}
}

// setImplStatus moves the tracked implementation between running/paused.
func (s *Session) setImplStatus(ctx context.Context, status, reason string) {
	s.mu.Lock()
	p := s.track.plan
	if p == nil || p.Status == ImplDone || p.Status == status {
		s.mu.Unlock()
		return
	}
	p.Status, p.Reason = status, reason
	s.mu.Unlock()
	if err := s.saveTracking(ctx); err != nil {
		s.m.log.Error("save tracking", "session", s.id, "err", err)
	}
	s.emitSteps()
}

// ResumeImplementation continues a paused implementation with its remaining
// steps, under the accepted implementation policy.
func (s *Session) ResumeImplementation(ctx context.Context) error {
	p := s.TrackedPlan()
	if p == nil || p.Status != ImplPaused {
		return &Error{Code: CodeNothingToRetry, Message: "there is no paused implementation to resume"}
	}
	s.setImplStatus(ctx, ImplRunning, "")
	policy := p.Policy
	text := "Resume implementing the accepted plan. " + p.Carry() + "\nContinue with the first step still to do and update each step's status with update_plan_step."
	if p.Reason == "paused by restart" {
		text = handoff.InterruptedPrompt(p.Carry()) + "\nUpdate each step's status with update_plan_step."
	}
	s.enqueue(turnReq{text: text, display: "Resume implementation", policy: &policy})
	return nil
}

// sessionTools are the tools bound to this session's tracking state.
func (s *Session) sessionTools() []*agent.Tool {
	return []*agent.Tool{
		{
			Spec: agent.ToolSpec{Name: "todo_write", Description: "Replace your whole todo list (at most 40 items, one in_progress). An empty list clears it.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["items"]}`)},
			Meta: agent.Meta{SessionOnly: true},
			Run: func(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
				var a struct {
					Items []TodoItem `json:"items"`
				}
				if err := json.Unmarshal(args, &a); err != nil {
					return "", fmt.Errorf("todo_write: invalid arguments: %w", err)
				}
				items, err := s.WriteTodos(ctx, a.Items)
				if err != nil {
					return "", err
				}
				return RenderTodos(items), nil
			},
		},
		{
			Spec: agent.ToolSpec{Name: "update_plan_step", Description: "Set the status of a step of the accepted plan (pending, in_progress, completed, blocked, skipped).",
				Parameters: json.RawMessage(`{"type":"object","properties":{"step":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed","blocked","skipped"]}},"required":["step","status"]}`)},
			Meta: agent.Meta{SessionOnly: true},
			Run: func(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
				var a struct{ Step, Status string }
				if err := json.Unmarshal(args, &a); err != nil {
					return "", fmt.Errorf("update_plan_step: invalid arguments: %w", err)
				}
				p, err := s.UpdateStep(ctx, a.Step, a.Status)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%d of %d steps finished.", p.Done(), len(p.Steps)), nil
			},
		},
	}
}
