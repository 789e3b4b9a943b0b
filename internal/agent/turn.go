package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Sink receives everything a turn does, in order. Implementations must not
// block for long: they run on the turn's goroutine.
type Sink interface {
	// Text is a raw assistant text delta of the current model response.
	Text(delta string)
	// ResponseDone is called with the complete text of each model response.
	ResponseDone(text string)
	ToolCall(call ToolCall)
	ToolResult(call ToolCall, ok bool, output string)
	// Blocked reports a refusal by the gate (or the runner's dynamic check).
	Blocked(call ToolCall, code, reason string)
}

// Asker asks the person whether a tool call may run.
type Asker func(ctx context.Context, call ToolCall, reason string) (bool, error)

// Turn is one agent turn: model requests and tool calls until the model
// answers without calling a tool.
type Turn struct {
	Engine   Engine
	Model    string
	Effort   string
	Messages []Message // system prompt first, the new user message last
	Tools    *Registry
	Gate     Gate
	Env      Env
	Ask      Asker // nil denies every Ask verdict
	Sink     Sink
	MaxSteps int // model requests per turn; default 64
}

// TurnResult is what a turn adds to the conversation.
type TurnResult struct {
	Messages []Message // assistant and tool messages, in order
	Usage    Usage
	Requests int
}

// ErrTooManySteps ends a turn that keeps calling tools.
var ErrTooManySteps = errors.New("turn stopped: too many model requests")

// Run executes the turn. It returns the messages produced so far even on
// error, so a caller can persist partial progress.
func (t *Turn) Run(ctx context.Context) (TurnResult, error) {
	var res TurnResult
	max := t.MaxSteps
	if max <= 0 {
		max = 64
	}
	convo := append([]Message(nil), t.Messages...)
	offered := t.Tools.Specs(func(tool *Tool) bool {
		// Exposure filter: advisory only, the gate is what is trusted.
		return !t.Gate.Plan || tool.Meta.ReadOnly || tool.Meta.SessionOnly || tool.Spec.Name == "apply_patch" || tool.Spec.Name == "bash"
	})
	for step := 0; ; step++ {
		if step >= max {
			return res, ErrTooManySteps
		}
		resp, err := t.Engine.Stream(ctx, Request{Model: t.Model, Effort: t.Effort, Messages: convo, Tools: offered}, t.Sink.Text)
		res.Requests++
		if err != nil {
			return res, err
		}
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		msg := Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
		convo = append(convo, msg)
		res.Messages = append(res.Messages, msg)
		t.Sink.ResponseDone(resp.Text)
		if len(resp.ToolCalls) == 0 {
			return res, nil
		}
		for _, call := range resp.ToolCalls {
			out := t.dispatch(ctx, call)
			tm := Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: out}
			convo = append(convo, tm)
			res.Messages = append(res.Messages, tm)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
}

// dispatch passes one call through the gate and runs it if allowed. It
// returns the tool message content for the model.
func (t *Turn) dispatch(ctx context.Context, call ToolCall) string {
	t.Sink.ToolCall(call)
	if !json.Valid(call.Arguments) {
		call.Arguments = json.RawMessage(`{}`)
	}
	tool := t.Tools.Get(call.Name)
	d := t.Gate.Decide(tool, call)
	if d.Verdict == Ask {
		allowed := false
		if t.Ask != nil {
			var err error
			allowed, err = t.Ask(ctx, call, d.Reason)
			if err != nil {
				allowed = false
			}
		}
		if !allowed {
			reason := fmt.Sprintf("the person did not allow %s.", call.Name)
			t.Sink.ToolResult(call, false, reason)
			return RefusalJSON(CodePermissionDenied, call.Name, reason)
		}
		d.Verdict = Run
	}
	if d.Verdict == Refuse {
		t.Sink.Blocked(call, d.Code, d.Reason)
		return RefusalJSON(d.Code, call.Name, d.Reason)
	}
	env := t.Env
	env.ReadOnlyShell = d.ReadOnlyShell || t.Gate.Plan
	out, err := tool.Run(ctx, &env, call.Arguments)
	var refused *RefusedError
	if errors.As(err, &refused) {
		code := CodePlanBlocked
		reason := "bash command refused at execution: " + refused.Reason + "."
		if t.Gate.Plan {
			reason += planAdvice
		}
		t.Sink.Blocked(call, code, reason)
		return RefusalJSON(code, call.Name, reason)
	}
	if err != nil {
		msg := "error: " + err.Error()
		t.Sink.ToolResult(call, false, msg)
		return msg
	}
	t.Sink.ToolResult(call, true, out)
	return out
}
