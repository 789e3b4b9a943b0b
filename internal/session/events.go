package session

import (
	"encoding/json"
	"planbridge/review"

	"planbridge/goal"
	"planbridge/handoff"
)

// EventData is the data of one kind of session event: the catalogue below
// is every kind there is (one struct per kind, as docs/protocol.md lists
// them). Kind is the name on the wire; the struct's JSON is the data.
type EventData interface{ Kind() string }

// UserEvent: a prompt that started a turn (Display is what the view shows).
type UserEvent struct {
	Text    string `json:"text"`
	Display string `json:"display"`
}

// TurnStartEvent: a model turn began; Plan is the turn's Plan stamp.
type TurnStartEvent struct {
	Turn int64 `json:"turn"`
	Plan bool  `json:"plan"`
}

// TextEvent: streamed assistant text (grouped deltas), proposal hidden.
type TextEvent struct {
	Delta string `json:"delta"`
}

// ToolCallEvent: the model called a tool.
type ToolCallEvent struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResultEvent: a tool call's result (Output clipped for the view).
type ToolResultEvent struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Output string `json:"output"`
}

// BlockedEvent: the gate refused a call.
type BlockedEvent struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// TurnEndEvent: a turn settled; Error is set when OK is false.
type TurnEndEvent struct {
	Turn  int64  `json:"turn"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// ErrorEvent: something failed visibly. Durable is set (false) only on the
// notification of an event whose own commit failed.
type ErrorEvent struct {
	Message string `json:"message"`
	Durable *bool  `json:"durable,omitempty"`
}

// NoticeEvent: a server-side message for the person.
type NoticeEvent struct {
	Message string `json:"message"`
}

// QueuedEvent: input waits in the pending-input queue.
type QueuedEvent struct {
	Text   string `json:"text"`
	Queued int    `json:"queued"`
}

// StatusEvent: the session's posture and state.
type StatusEvent struct {
	Plan           bool   `json:"plan"`
	Mode           string `json:"mode"`
	Busy           bool   `json:"busy"`
	Queued         int    `json:"queued"`
	Title          string `json:"title"`
	ProposalStatus string `json:"proposal_status"`
	ProposalTitle  string `json:"proposal_title"`
	Approval       string `json:"approval"`
	BlockedTotal   int64  `json:"blocked_total"`
	RefusedTotal   int64  `json:"refused_total"`
	Goal           string `json:"goal"`
	ForkedTo       string `json:"forked_to"`
}

// ApprovalClosedEvent: the presentation Attempt ended (accepted, parked,
// feedback, cancelled, demoted, interrupted, timed_out: the Outcome*
// constants).
type ApprovalClosedEvent struct {
	Attempt   string             `json:"attempt"`
	Reason    string             `json:"reason"`
	Selection *handoff.Selection `json:"selection,omitempty"` // accepted: what the implementation runs with
}

// HandoffEvent: the handoff started, failed (Step, Reason) or is done;
// done names the plan that was implemented (Plan).
type HandoffEvent struct {
	State  string       `json:"state"`
	Step   handoff.Step `json:"step,omitempty"`
	Reason string       `json:"reason,omitempty"`
	Plan   *HandoffPlan `json:"plan,omitempty"`
}

// HandoffPlan is the provenance a finished handoff reports.
type HandoffPlan struct {
	Title   string `json:"title"`
	Hash    string `json:"hash"`
	Trailer string `json:"trailer"`
}

// ParkedStartedEvent: parked plan ID was started at Location; StaleBase
// and Notice say when HEAD moved since approval.
type ParkedStartedEvent struct {
	ID        string           `json:"id"`
	Location  handoff.Location `json:"location"`
	StaleBase bool             `json:"stale_base"`
	Notice    string           `json:"notice,omitempty"`
}

// ForkedEvent: the implementation continues in Worktree fork Fork.
type ForkedEvent struct {
	Fork   string `json:"fork"`
	Branch string `json:"branch"`
	Dir    string `json:"dir"`
}

// SummaryEvent: the handoff summary arrived (its length).
type SummaryEvent struct {
	Chars int `json:"chars"`
}

// CompactedEvent: the context was compacted into segment Segment.
type CompactedEvent struct {
	Segment int64  `json:"segment"`
	Reason  string `json:"reason"`
	Chars   int    `json:"chars"`
}

// ProposalEvent: a proposal was published (Text is its plain rendering).
type ProposalEvent struct {
	Title  string `json:"title"`
	Body   string `json:"body"`
	Hash   string `json:"hash"`
	Path   string `json:"path"`
	Text   string `json:"text"`
	Edited bool   `json:"edited"`
}

// ReportEvent: an implementation report was built (and stored).
type ReportEvent struct{ review.Report }

// ScopeEvent: the declared scope of the implementation changed: the person
// extended it, or writes outside it were restored.
type ScopeEvent struct{ review.Scope }

// DiagnosticEvent: a proposal diagnostic (warning or hint).
type DiagnosticEvent struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// TodoEvent: the todo list was replaced.
type TodoEvent struct {
	Items []TodoItem `json:"items"`
}

// GoalEvent: the Goal changed (Goal nil: none). KickoffPending is present
// whenever a Goal is.
type GoalEvent struct {
	Goal           *goal.Goal `json:"goal"`
	Summary        string     `json:"summary"`
	KickoffPending *bool      `json:"kickoff_pending,omitempty"`
}

func (UserEvent) Kind() string           { return "user" }
func (TurnStartEvent) Kind() string      { return "turn_start" }
func (TextEvent) Kind() string           { return "text" }
func (ToolCallEvent) Kind() string       { return "tool_call" }
func (ToolResultEvent) Kind() string     { return "tool_result" }
func (BlockedEvent) Kind() string        { return "blocked" }
func (TurnEndEvent) Kind() string        { return "turn_end" }
func (ErrorEvent) Kind() string          { return "error" }
func (NoticeEvent) Kind() string         { return "notice" }
func (QueuedEvent) Kind() string         { return "queued" }
func (StatusEvent) Kind() string         { return "status" }
func (ApprovalClosedEvent) Kind() string { return "approval_closed" }
func (HandoffEvent) Kind() string        { return "handoff" }
func (ForkedEvent) Kind() string         { return "forked" }
func (SummaryEvent) Kind() string        { return "summary" }
func (CompactedEvent) Kind() string      { return "compacted" }
func (ProposalEvent) Kind() string       { return "proposal" }
func (DiagnosticEvent) Kind() string     { return "diagnostic" }
func (TodoEvent) Kind() string           { return "todo" }
func (GoalEvent) Kind() string           { return "goal" }
func (ReportEvent) Kind() string         { return "report" }
func (ScopeEvent) Kind() string          { return "scope" }
func (ParkedStartedEvent) Kind() string  { return "parked_started" }

// Kind makes a parked plan an event ("parked").
func (ParkedView) Kind() string { return "parked" }

// Kind makes the card an event ("approval").
func (ApprovalView) Kind() string { return "approval" }

// StepsEvent: an accepted plan's progress (its [TrackedPlan], inline).
type StepsEvent struct{ *TrackedPlan }

// Kind makes an accepted plan's progress an event ("steps").
func (StepsEvent) Kind() string { return "steps" }
