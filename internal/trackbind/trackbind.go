package trackbind

import (
	"context"
	"encoding/json"

	"planbridge/internal/agent"
	"planbridge/review"
)

// A Binding is one session's tracker as its turns reach it.
type Binding struct {
	Tracker *review.Tracker
	// Tool finds a tool in the session's registry (nil: none by that name).
	Tool func(name string) *agent.Tool
	// Roots are the session's workspace and work:// root, as they are now.
	Roots func() agent.Roots
}

// Call is call as the tracker sees it: its command argument (a bash
// call's) and the paths its tool declares it writes.
func (b Binding) Call(call agent.ToolCall) review.Call {
	var a struct{ Command string }
	_ = json.Unmarshal(call.Arguments, &a)
	c := review.Call{ID: call.ID, Name: call.Name, Command: a.Command, Arguments: call.Arguments}
	if t := b.Tool(call.Name); t != nil && t.Meta.Writes != nil {
		if targets, err := t.Meta.Writes(call.Arguments); err == nil {
			c.Writes = targets
		}
	}
	return c
}

// Scope is the scope the gate holds for a turn ([agent.Gate.Scope]): the
// tracker's while an accepted plan's implementation is not done and the
// turn is not a Plan turn, nil otherwise.
func (b Binding) Scope(plan bool) agent.WriteScope {
	if plan || !b.Tracker.Holding() {
		return nil
	}
	return b.Tracker
}

// Watcher is the [agent.Watcher] of a turn's unconfined shell commands
// while [Binding.Scope] holds a scope (nil otherwise); unattended marks a
// turn no person can answer for.
func (b Binding) Watcher(plan, unattended bool) agent.Watcher {
	if b.Scope(plan) == nil {
		return nil
	}
	return watcher{b: b, unattended: unattended}
}

type watcher struct {
	b          Binding
	unattended bool
}

func (w watcher) Before(ctx context.Context, call agent.ToolCall) (func(context.Context, string) string, error) {
	return w.b.Tracker.Watch(ctx, w.b.Call(call), w.unattended)
}

// LogTool records one completed tool call of the implementation
// ([review.Tracker.LogTool]).
func (b Binding) LogTool(call agent.ToolCall, ok bool, output string) {
	c := review.Call{ID: call.ID, Name: call.Name}
	if b.Tracker.Logging() {
		c = b.Call(call)
	}
	b.Tracker.LogTool(c, ok, output)
}

// Extend records, after the person allowed call, the workspace files it
// writes ([review.Tracker.Extend] keeps those outside the scope).
func (b Binding) Extend(call agent.ToolCall) {
	targets := b.Call(call).Writes
	if len(targets) == 0 {
		return
	}
	roots := b.Roots()
	var rels []string
	for _, p := range targets {
		if w, err := roots.ClassifyWrite(p); err == nil && w.Class == agent.WriteWorkspace && w.Rel != "" {
			rels = append(rels, w.Rel)
		}
	}
	b.Tracker.Extend(rels)
}

// Tools are the tracker's tools ([review.Tracker.Tools]) as session-only
// agent tools.
func Tools(t *review.Tracker) []*agent.Tool {
	var out []*agent.Tool
	for _, st := range t.Tools() {
		out = append(out, &agent.Tool{Spec: agent.ToolSpec{Name: st.Name, Description: st.Description, Parameters: st.Parameters},
			Meta: agent.Meta{SessionOnly: true},
			Run: func(ctx context.Context, _ *agent.Env, args json.RawMessage) (string, error) {
				return st.Run(ctx, args)
			}})
	}
	return out
}

// AskScopeEffects is the kind of a question about what a command already
// changed outside the declared scope: allowing extends the scope,
// denying restores the changes ([AskKind]).
const AskScopeEffects = "scope_effects"

type askKindKey struct{}

// AskKind is the kind of the question an asker is called for: "" for
// "may this call run?", or [AskScopeEffects].
func AskKind(ctx context.Context) string {
	k, _ := ctx.Value(askKindKey{}).(string)
	return k
}

// Asker is the tracker's [review.Asker] over the person's ask (nil: no
// person can answer, and so none is returned): each question is marked
// [AskScopeEffects].
func Asker(ask agent.Asker) review.Asker {
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, c review.Call, q string) (bool, error) {
		return ask(context.WithValue(ctx, askKindKey{}, AskScopeEffects), agent.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}, q)
	}
}
