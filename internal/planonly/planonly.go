package planonly

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"planbridge/internal/event"
	"planbridge/internal/session"
)

// Result is what a headless Plan turn produced.
type Result struct {
	Session string `json:"session"`
	// Proposed reports that the turn ended with an actionable proposal;
	// Title, Body and Hash are then its.
	Proposed bool   `json:"proposed"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	Hash     string `json:"hash"`
	// Diagnostics are the extraction warnings and hints of the turn's
	// responses, in order.
	Diagnostics []event.Diagnostic `json:"diagnostics"`
	// Warnings are the pre-approval warnings about the proposal (always
	// empty until that check exists).
	Warnings     []string `json:"warnings"`
	BlockedTotal int64    `json:"blocked_total"` // tool calls Plan refused
	RefusedTotal int64    `json:"refused_total"`
}

// ErrTurnFailed is [Run]'s error when the turn failed (the model request
// failed, was interrupted, or the transcript could not be saved).
var ErrTurnFailed = errors.New("the Plan turn failed")

// Run runs one Plan turn on prompt in a new session of m over workspace,
// with no client attached, and reports its proposal. The prompt is sent as
// it is (a leading "/plan" or "/goal" is not a command here) and checked
// first ([session.CheckPrompt]), before any session exists. Permission
// asks are denied: m is expected to have no asker or one that refuses. A
// failed turn is returned as an error wrapping [ErrTurnFailed] with the
// result so far.
func Run(ctx context.Context, m *session.Manager, workspace, prompt string) (Result, error) {
	if err := session.CheckPrompt(prompt); err != nil {
		return Result{}, err
	}
	s, err := m.Create(ctx, workspace)
	if err != nil {
		return Result{}, err
	}
	res := Result{Session: s.ID(), Diagnostics: []event.Diagnostic{}, Warnings: []string{}}
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
	diags, turnErr := Digest(evs)
	res.Diagnostics = append(res.Diagnostics, diags...)
	in := s.Info()
	res.BlockedTotal, res.RefusedTotal = in.BlockedTotal, in.RefusedTotal
	p, ok, err := s.Proposed()
	if err != nil {
		return res, err
	}
	if ok {
		res.Proposed, res.Title, res.Body, res.Hash = true, p.Title, p.Body, p.Hash
	}
	if turnErr != "" {
		return res, fmt.Errorf("%w: %s", ErrTurnFailed, turnErr)
	}
	return res, nil
}

// Digest is what a headless run reports of a session's events: the
// diagnostics, in order, and the error of a turn that ended not ok (the
// last one's; "" if every turn ended ok). Events that do not decode are
// skipped.
func Digest(evs []event.Event) (diags []event.Diagnostic, turnErr string) {
	for _, e := range evs {
		switch e.Kind {
		case "diagnostic":
			var d event.Diagnostic
			if json.Unmarshal(e.Data, &d) == nil {
				diags = append(diags, d)
			}
		case "turn_end":
			var t event.TurnEnd
			if json.Unmarshal(e.Data, &t) == nil && !t.OK {
				turnErr = t.Error
			}
		}
	}
	return diags, turnErr
}
