package acp

import "encoding/json"

// ProtocolVersion is the ACP version this client speaks.
const ProtocolVersion = 1

// InitializeParams is the client's half of the handshake.
type InitializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities says which client methods the agent may call.
type ClientCapabilities struct {
	FS       FSCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

// FSCapabilities advertises fs/read_text_file and fs/write_text_file.
type FSCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// Implementation names a program and its version.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// InitializeResult is the agent's half of the handshake.
type InitializeResult struct {
	ProtocolVersion   int             `json:"protocolVersion"`
	AgentCapabilities json.RawMessage `json:"agentCapabilities,omitempty"`
	AgentInfo         *Implementation `json:"agentInfo,omitempty"`
	AuthMethods       []AuthMethod    `json:"authMethods,omitempty"`
}

// AuthMethod is one way the agent can authenticate.
type AuthMethod struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// NewSessionParams opens a session working in Cwd (absolute).
type NewSessionParams struct {
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

// NewSessionResult names the session and the modes it offers.
type NewSessionResult struct {
	SessionID string     `json:"sessionId"`
	Modes     *ModeState `json:"modes,omitempty"`
}

// ModeState is the agent's current mode and the modes it offers.
type ModeState struct {
	CurrentModeID  string `json:"currentModeId"`
	AvailableModes []Mode `json:"availableModes"`
}

// Mode is one of the agent's session modes.
type Mode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SetModeParams switches a session's mode.
type SetModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// ContentBlock is a piece of content (only text is produced here).
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// PromptParams sends the person's prompt.
type PromptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// PromptResult ends a prompt turn.
type PromptResult struct {
	StopReason string `json:"stopReason"`
}

// Stop reasons.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
	StopRefusal   = "refusal"
)

// CancelParams is session/cancel's payload.
type CancelParams struct {
	SessionID string `json:"sessionId"`
}

// SessionNotification is session/update's payload.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
}

// SessionUpdate is one update; Kind ("sessionUpdate") says which fields
// are set: agent_message_chunk and agent_thought_chunk carry Content;
// tool_call and tool_call_update carry the ToolCall fields; plan carries
// Entries; current_mode_update carries CurrentModeID.
type SessionUpdate struct {
	Kind    string          `json:"sessionUpdate"`
	Content json.RawMessage `json:"content,omitempty"`
	ToolCall
	Entries       []PlanEntry `json:"entries,omitempty"`
	CurrentModeID string      `json:"currentModeId,omitempty"`
}

// Text is the text of a message chunk's content block ("" for other
// content).
func (u SessionUpdate) Text() string {
	var b ContentBlock
	if json.Unmarshal(u.Content, &b) != nil || b.Type != "text" {
		return ""
	}
	return b.Text
}

// ToolCall describes a tool call the agent makes (in tool_call updates,
// tool_call_update updates and permission requests).
type ToolCall struct {
	ToolCallID string             `json:"toolCallId,omitempty"`
	Title      string             `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Status     string             `json:"status,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
}

// ToolCallLocation is a file a tool call touches.
type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// Tool kinds.
const (
	KindRead       = "read"
	KindEdit       = "edit"
	KindDelete     = "delete"
	KindMove       = "move"
	KindSearch     = "search"
	KindExecute    = "execute"
	KindThink      = "think"
	KindFetch      = "fetch"
	KindSwitchMode = "switch_mode"
	KindOther      = "other"
)

// Tool call statuses.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// PlanEntry is one step of the agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// RequestPermissionParams is session/request_permission's payload.
type RequestPermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCall           `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// Permission option kinds.
const (
	AllowOnce    = "allow_once"
	AllowAlways  = "allow_always"
	RejectOnce   = "reject_once"
	RejectAlways = "reject_always"
)

// RequestPermissionResult answers a permission request.
type RequestPermissionResult struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is "selected" with an option, or "cancelled".
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// Selected answers with optionID; Cancelled answers a cancelled turn.
func Selected(optionID string) RequestPermissionResult {
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: "selected", OptionID: optionID}}
}

// Cancelled is the answer to a permission request of a cancelled turn.
func Cancelled() RequestPermissionResult {
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: "cancelled"}}
}

// Pick returns the id of the first option of kind want. A reject falls
// back to the other reject kind; an allow never does: allow_always would
// let the agent skip asking the next time, past the client's gate. ok is
// false when none fits.
func Pick(opts []PermissionOption, want string) (id string, ok bool) {
	kinds := []string{want}
	switch want {
	case RejectOnce:
		kinds = append(kinds, RejectAlways)
	case RejectAlways:
		kinds = append(kinds, RejectOnce)
	}
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k && !(o.OptionID == AbortOptionID && hasOtherOfKind(opts, k, o.OptionID)) {
				return o.OptionID, true
			}
		}
	}
	return "", false
}

// AbortOptionID is Codex's rejection that also ends its whole turn ("No,
// and tell Codex what to do differently"); [Pick] prefers its rejection
// that lets the turn go on ("No, continue without running it"), so a
// refused write in Plan still ends with a plan.
const AbortOptionID = "abort"

func hasOtherOfKind(opts []PermissionOption, kind, not string) bool {
	for _, o := range opts {
		if o.Kind == kind && o.OptionID != not {
			return true
		}
	}
	return false
}

// ReadTextFileParams is fs/read_text_file's payload. Line is 1-based.
type ReadTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ReadTextFileResult is fs/read_text_file's result.
type ReadTextFileResult struct {
	Content string `json:"content"`
}

// WriteTextFileParams is fs/write_text_file's payload.
type WriteTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// CreateTerminalParams is terminal/create's request: run Command with
// Args in Cwd (the session's cwd when empty) with Env added.
type CreateTerminalParams struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args,omitempty"`
	Env             []EnvVariable `json:"env,omitempty"`
	Cwd             string        `json:"cwd,omitempty"`
	OutputByteLimit *int          `json:"outputByteLimit,omitempty"`
}

// EnvVariable is one variable of [CreateTerminalParams].
type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CreateTerminalResult answers terminal/create.
type CreateTerminalResult struct {
	TerminalID string `json:"terminalId"`
}

// TerminalParams names a terminal (terminal/output, wait_for_exit, kill,
// release).
type TerminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

// TerminalExitStatus is how a terminal's command ended.
type TerminalExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

// TerminalOutputResult answers terminal/output; ExitStatus is nil while
// the command runs.
type TerminalOutputResult struct {
	Output     string              `json:"output"`
	Truncated  bool                `json:"truncated"`
	ExitStatus *TerminalExitStatus `json:"exitStatus,omitempty"`
}
