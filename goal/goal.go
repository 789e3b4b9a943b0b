package goal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors callers branch on. Each is returned wrapped or as is; test with
// [errors.Is].
var (
	ErrBlankObjective  = errors.New("goal: objective is blank")
	ErrNegativeBudget  = errors.New("goal: budget must be a positive number of tokens, or 0 for none")
	ErrInvalidUpdate   = errors.New("goal: update_goal status must be complete or blocked")
	ErrBlankSummary    = errors.New("goal: blocked needs a summary of what blocks it")
	ErrNotActive       = errors.New("goal: goal is not active")
	ErrNotResumable    = errors.New("goal: goal cannot be resumed")
	ErrBudgetExhausted = errors.New("goal: token budget exhausted; raise it with /goal budget N or none")
	ErrComplete        = errors.New("goal: goal is complete")
)

// Bounds on the free text a Goal stores, so that an error dump or a runaway
// model summary cannot bloat the persisted record or the client's header.
const (
	MaxReasonLen  = 500  // runes of a pause or failure reason
	MaxSummaryLen = 2000 // runes of an update_goal summary
)

// ContinuePrompt is the user message of a continuation turn.
const ContinuePrompt = "Continue working toward the active Goal."

// Reasons the package itself records.
const (
	ReasonRestart     = "paused by restart"
	ReasonUser        = "paused by user"
	ReasonPlanChanged = "accepted plan changed"
	ReasonInterrupted = "interrupted"
)

// Policy is the implementation policy the Goal's turns run with.
type Policy struct {
	Model  string `json:"model"`
	Effort string `json:"effort"`
	Mode   string `json:"mode"` // permission mode
}

// Goal is the record of one objective pursued across turns. It is a plain
// value: methods mutate it in memory and never persist, log or read the
// clock; the caller persists after every change and stamps UpdatedAt.
// Not safe for concurrent use; the session serializes access.
type Goal struct {
	ID         string        `json:"id"`
	Objective  string        `json:"objective"`
	Status     Status        `json:"status"`
	Reason     string        `json:"reason,omitempty"` // why it is not active, or the completion summary
	Budget     int64         `json:"budget"`           // token budget; 0 means unlimited
	TokensUsed int64         `json:"tokens_used"`      // provider input + output tokens of Goal turns
	TimeUsed   time.Duration `json:"time_used"`        // wall time of Goal turns
	Turns      int           `json:"turns"`
	// PlanRef is the accepted plan the Goal implements, as
	// "work://plans/accepted-….md#sha256", or "" for a Goal started
	// without a plan.
	PlanRef string `json:"plan_ref,omitempty"`
	Policy  Policy `json:"policy"`
	// NotesSent is the highest budget-note threshold (0, 50, 80 or 100)
	// already delivered to the model; see [Goal.Settle].
	NotesSent int `json:"notes_sent"`
	// EndRequested is the end the model asked for with update_goal during
	// the turn now running; [Goal.Settle] applies it together with that
	// turn's accounting, so nobody sees a finished Goal with stale usage.
	EndRequested *End      `json:"end_requested,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// End is a requested end of a Goal: [Complete] or [Blocked] with a summary.
type End struct {
	Status  Status `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// New returns an active Goal. It fails if id or objective is blank or budget
// is negative (0 means unlimited). The objective is stored trimmed.
func New(id, objective string, budget int64, planRef string, p Policy, now time.Time) (*Goal, error) {
	if strings.TrimSpace(id) == "" {
		return nil, errors.New("goal: blank id")
	}
	objective = strings.TrimSpace(objective)
	if objective == "" {
		return nil, ErrBlankObjective
	}
	if budget < 0 {
		return nil, ErrNegativeBudget
	}
	return &Goal{
		ID:        id,
		Objective: objective,
		Status:    Active,
		Budget:    budget,
		PlanRef:   planRef,
		Policy:    p,
		CreatedAt: now,
		UpdatedAt: now,
	}, nil
}

// NewID returns a fresh Goal id: "g-" followed by 32 hex digits (128 random
// bits), unguessable and collision-free in practice.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return "g-" + hex.EncodeToString(b[:])
}

// Update applies the model's update_goal call at once: status "complete"
// (summary optional) or "blocked" (summary required). It works only on an
// active Goal; the summary becomes [Goal.Reason], bounded to
// [MaxSummaryLen]. On error the Goal is unchanged. A call made during a
// turn goes through [Goal.RequestEnd] instead, so the end and the turn's
// accounting are settled together.
func (g *Goal) Update(status, summary string) error {
	e, err := g.parseEnd(status, summary)
	if err != nil {
		return err
	}
	g.Status, g.Reason = e.Status, e.Summary
	return nil
}

// RequestEnd validates the model's update_goal call exactly as
// [Goal.Update] does and records it in [Goal.EndRequested] without changing
// the status: the end takes effect when the turn settles ([Goal.Settle]), or
// at [Goal.RestorePaused] if the process died before that. A second request
// in the same turn replaces the first. On error the Goal is unchanged.
func (g *Goal) RequestEnd(status, summary string) error {
	e, err := g.parseEnd(status, summary)
	if err != nil {
		return err
	}
	g.EndRequested = &e
	return nil
}

func (g *Goal) parseEnd(status, summary string) (End, error) {
	summary = strings.TrimSpace(summary)
	var to Status
	switch strings.TrimSpace(status) {
	case "complete":
		to = Complete
	case "blocked":
		if summary == "" {
			return End{}, ErrBlankSummary
		}
		to = Blocked
	default:
		return End{}, fmt.Errorf("%w (got %q)", ErrInvalidUpdate, status)
	}
	if g.Status != Active {
		return End{}, fmt.Errorf("%w (it is %s)", ErrNotActive, g.Status)
	}
	return End{Status: to, Summary: bound(summary, MaxSummaryLen)}, nil
}

// applyEnd applies and clears a requested end. An end requested while the
// Goal was active but applied after the person paused it is dropped: the
// person's later decision wins.
func (g *Goal) applyEnd() {
	e := g.EndRequested
	g.EndRequested = nil
	if e == nil || g.Status != Active {
		return
	}
	g.Status, g.Reason = e.Status, e.Summary
}

// Pause stops an active Goal with reason (bounded to [MaxReasonLen]; blank
// means [ReasonUser]). Work in flight is not the Goal's business: the
// caller decides whether to interrupt it. Pausing a Goal that is not active
// changes nothing, so a blocked or budget-limited Goal keeps its more
// specific status and reason.
func (g *Goal) Pause(reason string) {
	if g.Status != Active {
		return
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = ReasonUser
	}
	g.Status = Paused
	g.Reason = bound(reason, MaxReasonLen)
}

// Resume makes a paused, blocked or budget-limited Goal active again and
// clears its reason. It fails with [ErrNotResumable] for an active or
// complete Goal, and with [ErrBudgetExhausted] while the tokens used have
// reached the budget (raise it first with [Goal.SetBudget]).
func (g *Goal) Resume() error {
	switch g.Status {
	case Paused, Blocked, BudgetLimited:
	default:
		return fmt.Errorf("%w: it is %s", ErrNotResumable, g.Status)
	}
	if g.exhausted() {
		return ErrBudgetExhausted
	}
	g.Status = Active
	g.Reason = ""
	return nil
}

// SetBudget sets the token budget; 0 removes it. It fails for a negative n
// or a complete Goal. Raising the budget of a budget-limited Goal above
// what it used makes it resumable (it stays budget-limited until
// [Goal.Resume]); lowering an active Goal's budget to or below what it used
// makes it budget-limited at once, since no settlement may come to do it.
// Budget notes are re-armed for thresholds the Goal is now below.
func (g *Goal) SetBudget(n int64) error {
	if n < 0 {
		return ErrNegativeBudget
	}
	if g.Status == Complete {
		return ErrComplete
	}
	g.Budget = n
	g.NotesSent = min(g.NotesSent, g.thresholdReached())
	if g.Status == Active && g.exhausted() {
		g.Status = BudgetLimited
		g.Reason = g.budgetReason()
	}
	return nil
}

// Edit replaces the objective (stored trimmed), keeping status, budget and
// accounting. It fails for a blank objective or a complete Goal. A kickoff
// prepared for the old objective must be dropped; the caller detects the
// edit by comparing objectives.
func (g *Goal) Edit(objective string) error {
	objective = strings.TrimSpace(objective)
	if objective == "" {
		return ErrBlankObjective
	}
	if g.Status == Complete {
		return ErrComplete
	}
	g.Objective = objective
	return nil
}

// RestorePaused is applied to a Goal loaded after a restart: an active Goal
// comes back paused with reason [ReasonRestart], since nothing is running
// for it any more and the person decides when to go on. Other statuses are
// kept. An end the model requested in a turn that never settled is applied
// first (the model said it was done; only the booking of that turn is lost).
func (g *Goal) RestorePaused() {
	g.applyEnd()
	g.Pause(ReasonRestart)
}

// OnTurnFailure records that a Goal turn failed with err and reports whether
// the caller should retry it. A transient transport failure
// (transient=true) is retried once: retry is true when retried is false.
// Any other failure, a failed retry, or an interrupt (err wrapping
// [context.Canceled], never retried) pauses an active Goal with a reason
// bounded to [MaxReasonLen]. A Goal that is no longer active (paused or
// cleared meanwhile) is left alone and never retried.
func (g *Goal) OnTurnFailure(err error, transient, retried bool) (retry bool) {
	if g.Status != Active {
		return false
	}
	interrupted := errors.Is(err, context.Canceled)
	if transient && !retried && !interrupted {
		return true
	}
	var reason string
	switch {
	case interrupted:
		reason = ReasonInterrupted
	case err == nil:
		reason = "turn failed"
	case transient:
		reason = "turn failed again after a retry: " + err.Error()
	default:
		reason = "turn failed: " + err.Error()
	}
	g.Pause(reason)
	return false
}

// Summary is a one-line status for headers and /goal, e.g.
// "Goal active · 1,234/10,000 tokens (12%) · 3 turns" or, without a budget,
// "Goal paused · 1,234 tokens (no budget) · 1 turn". The percentage is
// rounded down and may exceed 100.
func (g *Goal) Summary() string {
	if g == nil {
		return "No goal"
	}
	var tokens string
	if g.Budget > 0 {
		tokens = fmt.Sprintf("%s/%s tokens (%d%%)", group(g.TokensUsed), group(g.Budget), g.TokensUsed*100/g.Budget)
	} else {
		tokens = group(g.TokensUsed) + " tokens (no budget)"
	}
	turns := "turns"
	if g.Turns == 1 {
		turns = "turn"
	}
	return fmt.Sprintf("Goal %s · %s · %d %s", g.Status, tokens, g.Turns, turns)
}

// bound trims s to at most n runes, marking a cut with "…", and replaces
// invalid UTF-8 so the result is safe to send to the client.
func bound(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// group formats n with comma thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
