package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"planbridge/internal/event"
)

// PlanOnlyResult is what a headless Plan turn produced.
type PlanOnlyResult struct {
	Session string `json:"session"`
	// Proposed reports that the turn ended with an actionable proposal;
	// Title, Body and Hash are then its.
	Proposed bool   `json:"proposed"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	Hash     string `json:"hash"`
	// Diagnostics are the extraction warnings and hints of the turn's
	// responses, in order.
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Warnings are the pre-approval warnings about the proposal (always
	// empty until that check exists).
	Warnings     []string `json:"warnings"`
	BlockedTotal int64    `json:"blocked_total"` // tool calls Plan refused
	RefusedTotal int64    `json:"refused_total"`
}

// Diagnostic is one extraction diagnostic of a response.
type Diagnostic struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// ErrPlanTurnFailed is [Manager.PlanOnly]'s error when the turn failed (the model
// request failed, was interrupted, or the transcript could not be saved).
var ErrPlanTurnFailed = errors.New("the Plan turn failed")

// PlanOnly runs one Plan turn on prompt in a new session over workspace,
// with no client attached, and reports its proposal. The prompt is sent as
// it is (a leading "/plan" or "/goal" is not a command here). It never
// accepts, parks or hands off: nothing in this path reaches
// [Session.Accept], so the turn's only effects are Plan's (read-only
// tools, read-only shell, work:// notes). Permission asks are denied: the
// manager is expected to have no asker or one that refuses. A failed turn
// is returned as an error wrapping [ErrPlanTurnFailed] with the result so
// far.
func (m *Manager) PlanOnly(ctx context.Context, workspace, prompt string) (PlanOnlyResult, error) {
	if err := checkPrompt(prompt); err != nil {
		return PlanOnlyResult{}, err
	}
	s, err := m.Create(ctx, workspace)
	if err != nil {
		return PlanOnlyResult{}, err
	}
	res := PlanOnlyResult{Session: s.id, Diagnostics: []Diagnostic{}, Warnings: []string{}}
	if err := s.EnterPlan(ctx); err != nil {
		return res, err
	}
	if _, err := s.Queue(prompt); err != nil {
		return res, err
	}
	if err := s.Wait(ctx); err != nil {
		s.Interrupt()
		_ = s.Wait(context.WithoutCancel(ctx))
		return res, err
	}
	evs, err := s.Events(ctx, 0)
	if err != nil {
		return res, err
	}
	var turnErr string
	for _, e := range evs {
		switch e.Kind {
		case "diagnostic":
			var d event.Diagnostic
			if json.Unmarshal(e.Data, &d) == nil {
				res.Diagnostics = append(res.Diagnostics, Diagnostic(d))
			}
		case "turn_end":
			var t event.TurnEnd
			if json.Unmarshal(e.Data, &t) == nil && !t.OK {
				turnErr = t.Error
			}
		}
	}
	in := s.Info()
	res.BlockedTotal, res.RefusedTotal = in.BlockedTotal, in.RefusedTotal
	s.mu.Lock()
	p := s.prop
	s.mu.Unlock()
	if p != nil && p.Status == ProposalProposed {
		body, _, err := s.proposalBody(*p)
		if err != nil {
			return res, err
		}
		res.Proposed, res.Title, res.Body, res.Hash = true, p.Title, body, p.Hash
	}
	if turnErr != "" {
		return res, fmt.Errorf("%w: %s", ErrPlanTurnFailed, turnErr)
	}
	return res, nil
}
