package event

import (
	"encoding/json"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/review"
)

// Data is the data of one kind of session event: the catalogue below
// is every kind there is (one struct per kind, as docs/protocol.md lists
// them). Kind is the name on the wire; the struct's JSON is the data.
type Data interface{ Kind() string }

// User: a prompt that started a turn (Display is what the view shows).
type User struct {
	Text    string `json:"text"`
	Display string `json:"display"`
}

// TurnStart: a model turn began; Plan is the turn's Plan stamp.
type TurnStart struct {
	Turn int64 `json:"turn"`
	Plan bool  `json:"plan"`
}

// Text: streamed assistant text (grouped deltas), proposal hidden.
type Text struct {
	Delta string `json:"delta"`
}

// ToolCall: the model called a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult: a tool call's result (Output clipped for the view).
type ToolResult struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Output string `json:"output"`
}

// Blocked: the gate refused a call.
type Blocked struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// TurnEnd: a turn settled; Error is set when OK is false.
type TurnEnd struct {
	Turn  int64  `json:"turn"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Error: something failed visibly. Durable is set (false) only on the
// notification of an event whose own commit failed.
type Error struct {
	Message string `json:"message"`
	Durable *bool  `json:"durable,omitempty"`
}

// Notice: a server-side message for the person.
type Notice struct {
	Message string `json:"message"`
}

// Queued: input waits in the pending-input queue.
type Queued struct {
	Text   string `json:"text"`
	Queued int    `json:"queued"`
}

// Status: the session's posture and state.
type Status struct {
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

// ApprovalClosed: the presentation Attempt ended (accepted, parked,
// feedback, cancelled, demoted, interrupted, timed_out: the Outcome*
// constants).
type ApprovalClosed struct {
	Attempt   string             `json:"attempt"`
	Reason    string             `json:"reason"`
	Selection *handoff.Selection `json:"selection,omitempty"` // accepted: what the implementation runs with
}

// Handoff: the handoff started, failed (Step, Reason) or is done;
// done names the plan that was implemented (Plan).
type Handoff struct {
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

// ParkedStarted: parked plan ID was started at Location; StaleBase
// and Notice say when HEAD moved since approval.
type ParkedStarted struct {
	ID        string           `json:"id"`
	Location  handoff.Location `json:"location"`
	StaleBase bool             `json:"stale_base"`
	Notice    string           `json:"notice,omitempty"`
}

// Forked: the implementation continues in Worktree fork Fork.
type Forked struct {
	Fork   string `json:"fork"`
	Branch string `json:"branch"`
	Dir    string `json:"dir"`
}

// Summary: the handoff summary arrived (its length).
type Summary struct {
	Chars int `json:"chars"`
}

// Compacted: the context was compacted into segment Segment.
type Compacted struct {
	Segment int64  `json:"segment"`
	Reason  string `json:"reason"`
	Chars   int    `json:"chars"`
}

// Proposal: a proposal was published (Text is its plain rendering).
type Proposal struct {
	Title  string `json:"title"`
	Body   string `json:"body"`
	Hash   string `json:"hash"`
	Path   string `json:"path"`
	Text   string `json:"text"`
	Edited bool   `json:"edited"`
}

// Report: an implementation report was built (and stored).
type Report struct{ review.Report }

// Scope: the declared scope of the implementation changed: the person
// extended it, or writes outside it were restored.
type Scope struct{ review.Scope }

// Diagnostic: a proposal diagnostic (warning or hint).
type Diagnostic struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Todo: the todo list was replaced.
type Todo struct {
	Items []review.TodoItem `json:"items"`
}

// Goal: the Goal changed (Goal nil: none). KickoffPending is present
// whenever a Goal is.
type Goal struct {
	Goal           *goal.Goal `json:"goal"`
	Summary        string     `json:"summary"`
	KickoffPending *bool      `json:"kickoff_pending,omitempty"`
}

// Steps: an accepted plan's progress (its [review.TrackedPlan], inline).
type Steps struct{ *review.TrackedPlan }

// The kinds whose data is a view the session derives (its approval card
// and a parked plan), whose structs are the session's own.
const (
	KindApproval = "approval"
	KindParked   = "parked"
)

func (User) Kind() string           { return "user" }
func (TurnStart) Kind() string      { return "turn_start" }
func (Text) Kind() string           { return "text" }
func (ToolCall) Kind() string       { return "tool_call" }
func (ToolResult) Kind() string     { return "tool_result" }
func (Blocked) Kind() string        { return "blocked" }
func (TurnEnd) Kind() string        { return "turn_end" }
func (Error) Kind() string          { return "error" }
func (Notice) Kind() string         { return "notice" }
func (Queued) Kind() string         { return "queued" }
func (Status) Kind() string         { return "status" }
func (ApprovalClosed) Kind() string { return "approval_closed" }
func (Handoff) Kind() string        { return "handoff" }
func (Forked) Kind() string         { return "forked" }
func (Summary) Kind() string        { return "summary" }
func (Compacted) Kind() string      { return "compacted" }
func (Proposal) Kind() string       { return "proposal" }
func (Diagnostic) Kind() string     { return "diagnostic" }
func (Todo) Kind() string           { return "todo" }
func (Goal) Kind() string           { return "goal" }
func (Report) Kind() string         { return "report" }
func (Scope) Kind() string          { return "scope" }
func (ParkedStarted) Kind() string  { return "parked_started" }
func (Steps) Kind() string          { return "steps" }
