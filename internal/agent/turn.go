package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// Depth is 0 for a root turn and 1 for a child agent's turn; children
	// cannot delegate further.
	Depth int
	// Record, when set, makes each message durable as it completes: the
	// assistant message once its response is complete (before its tool
	// calls run) and each tool message once its call returns, so before the
	// next model request. An error ends the turn with that error, before
	// anything else runs.
	Record func(ctx context.Context, m Message) error
	// Watch, when set, observes the calls whose writes are not declared
	// ([Watched]); child agents share it.
	Watch Watcher

	childUsage Usage // tokens spent by child agents of this turn
}

// TurnResult is what a turn adds to the conversation.
type TurnResult struct {
	Messages []Message // assistant and tool messages, in order
	Usage    Usage
	Requests int
}

// A Watcher observes what a call whose writes cannot be declared in
// advance changed ([Watched]): Before runs just before the call and the
// function it returns (nil: nothing watched) just after, with the call's
// output and context (cancelled by then, perhaps: after settles the
// effects all the same); what that returns is the output the model and
// the sink get. A Before that fails refuses the call ([CodeUnwatched]): what cannot be
// observed does not run.
type Watcher interface {
	Before(ctx context.Context, call ToolCall) (after func(ctx context.Context, out string) string, err error)
}

// Watched reports whether a call of t run with env is one a [Watcher]
// observes: a tool that may change files (not read-only, session-only or
// delegating) and declares no [Meta.Writes], run unconfined (not by the
// read-only runner). Today that is bash outside the read-only runner; a
// tool is never exempted by its name.
func Watched(t *Tool, env *Env) bool {
	return t != nil && t.Meta.Writes == nil && !t.Meta.ReadOnly && !t.Meta.SessionOnly && !t.Meta.Delegates && !env.ReadOnlyShell
}

// ErrTooManySteps ends a turn that keeps calling tools.
var ErrTooManySteps = errors.New("turn stopped: too many model requests")

// Run executes the turn. It returns the messages produced so far even on
// error, so a caller can persist partial progress.
func (t *Turn) Run(ctx context.Context) (TurnResult, error) {
	if run, ok := turnEngine(t.Engine); ok && t.Depth == 0 {
		return run(ctx, t)
	}
	var res TurnResult
	max := t.MaxSteps
	if max <= 0 {
		max = 64
	}
	convo := append([]Message(nil), t.Messages...)
	offered := t.Tools.Specs(func(tool *Tool) bool {
		// Exposure filter: advisory only, the gate is what is trusted.
		if tool.Meta.Delegates && t.Depth > 0 {
			return false
		}
		return !t.Gate.Plan || tool.Meta.ReadOnly || tool.Meta.SessionOnly || tool.Meta.Delegates ||
			tool.Meta.OfferInPlan || tool.Spec.Name == "bash"
	})
	defer func() {
		res.Usage.Add(t.childUsage)
	}()
	for step := 0; ; step++ {
		if step >= max {
			return res, ErrTooManySteps
		}
		resp, err := t.Engine.Stream(ctx, Request{Model: t.Model, Effort: t.Effort, Messages: convo, Tools: offered}, t.Sink.Text)
		res.Requests++
		if err != nil {
			return res, err
		}
		res.Usage.Add(resp.Usage)
		msg := Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Thinking: resp.Thinking}
		if err := t.record(ctx, msg); err != nil {
			return res, err
		}
		convo = append(convo, msg)
		res.Messages = append(res.Messages, msg)
		t.Sink.ResponseDone(resp.Text)
		if len(resp.ToolCalls) == 0 {
			return res, nil
		}
		for _, call := range resp.ToolCalls {
			out := t.dispatch(ctx, call)
			tm := Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: out}
			if err := t.record(ctx, tm); err != nil {
				return res, err
			}
			convo = append(convo, tm)
			res.Messages = append(res.Messages, tm)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
}

func (t *Turn) record(ctx context.Context, m Message) error {
	if t.Record == nil {
		return nil
	}
	// Even a cancelled turn keeps what happened.
	return t.Record(context.WithoutCancel(ctx), m)
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
	if tool.Meta.Delegates {
		if t.Depth > 0 {
			msg := "error: a child agent cannot delegate further"
			t.Sink.ToolResult(call, false, msg)
			return msg
		}
		return t.delegate(ctx, call)
	}
	env := t.Env
	env.ReadOnlyShell = d.ReadOnlyShell || t.Gate.Plan
	env.AllowProtected = d.Protected
	var after func(context.Context, string) string
	if t.Watch != nil && Watched(tool, &env) {
		var err error
		if after, err = t.Watch.Before(ctx, call); err != nil {
			reason := fmt.Sprintf("%s refused: its effects on the workspace cannot be observed (%v), so it did not run.", call.Name, err)
			t.Sink.Blocked(call, CodeUnwatched, reason)
			return RefusalJSON(CodeUnwatched, call.Name, reason)
		}
	}
	out, err := tool.Run(ctx, &env, call.Arguments)
	if after != nil {
		// Whatever the call's outcome, its effects are held to account.
		if err != nil {
			err = errors.New(after(ctx, err.Error()))
		} else {
			out = after(ctx, out)
		}
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		code := CodePlanBlocked
		reason := "bash command refused at execution: " + refused.Reason + "."
		reason += t.Gate.advice()
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

// RootPrompt is the system prompt of a root turn over workspace.
func RootPrompt(workspace string) string {
	return fmt.Sprintf(rootPrompt, workspace)
}

const rootPrompt = `You are a careful coding agent working in the repository at %s.
Use the tools to inspect files before changing them. Paths are relative to the workspace;
work:// paths address your own session notes and plan files.`

// childPrompt is the system prompt of a child agent.
const childPrompt = `You are a child agent helping a coding agent. Do the task you are given with the tools
you have and answer with a concise report of what you found or did. Your answer goes back to the
agent that delegated the task, not to the person.`

// childPlanNote is added to a child's system prompt when the delegating
// turn runs under Plan: the child's own, short Plan guidance (a child never
// proposes; it investigates and reports).
const childPlanNote = `

Plan mode is on: you may only investigate, with read-only tools (reading, listing, searching,
read-only shell commands). Do not try to change files or run commands that change anything; such
calls are refused. Do not write a plan block: report what you found, and what should change, to the
agent that delegated the task.`

// delegate runs a child agent for call. The child's turn carries this
// turn's Gate, so a turn started under Plan keeps Plan's limits for its
// children, their tools and their Bash until it ends. Child output is
// information for the parent: it never becomes a proposal.
func (t *Turn) delegate(ctx context.Context, call ToolCall) string {
	var a struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil || strings.TrimSpace(a.Task) == "" {
		msg := "error: agent needs a non-empty task"
		t.Sink.ToolResult(call, false, msg)
		return msg
	}
	gate := t.Gate
	gate.Child = true
	prompt := childPrompt
	if gate.Plan {
		prompt += childPlanNote
	}
	child := &Turn{
		Engine: t.Engine, Model: t.Model, Effort: t.Effort,
		Messages: []Message{{Role: RoleSystem, Content: prompt}, {Role: RoleUser, Content: a.Task}},
		Tools:    t.Tools, Gate: gate, Env: t.Env, Ask: t.Ask, Watch: t.Watch,
		Sink: childSink{t.Sink}, MaxSteps: 32, Depth: t.Depth + 1,
	}
	res, err := child.Run(ctx)
	t.childUsage.Add(res.Usage)
	answer := ""
	for i := len(res.Messages) - 1; i >= 0; i-- {
		if m := res.Messages[i]; m.Role == RoleAssistant && strings.TrimSpace(m.Content) != "" {
			answer = m.Content
			break
		}
	}
	if err != nil {
		msg := "error: the child agent stopped: " + err.Error()
		if answer != "" {
			msg += "\nIts last report:\n" + answer
		}
		t.Sink.ToolResult(call, false, clip(msg))
		return clip(msg)
	}
	t.Sink.ToolResult(call, true, clip(answer))
	return clip(answer)
}

// childSink forwards a child's tool activity to the parent's sink (it is
// visible and counted) but not its prose: that is no root-assistant text.
type childSink struct{ parent Sink }

func (c childSink) Text(string)            {}
func (c childSink) ResponseDone(string)    {}
func (c childSink) ToolCall(call ToolCall) { c.parent.ToolCall(call) }
func (c childSink) ToolResult(call ToolCall, ok bool, out string) {
	c.parent.ToolResult(call, ok, out)
}
func (c childSink) Blocked(call ToolCall, code, reason string) { c.parent.Blocked(call, code, reason) }
