package agent

import (
	"encoding/json"
	"fmt"
)

// Mode is a session's permission mode.
type Mode string

// Permission modes.
const (
	ModeAsk      Mode = "ask"
	ModeEdits    Mode = "edits"
	ModeFullAuto Mode = "full-auto"
)

// ParseMode validates a permission mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAsk, ModeEdits, ModeFullAuto:
		return m, nil
	}
	return "", fmt.Errorf("unknown permission mode %q (want ask, edits or full-auto)", s)
}

// Next cycles ask → edits → full-auto → ask.
func (m Mode) Next() Mode {
	switch m {
	case ModeAsk:
		return ModeEdits
	case ModeEdits:
		return ModeFullAuto
	}
	return ModeAsk
}

// Verdict is what the gate decided for one call.
type Verdict int

// Gate verdicts.
const (
	Run Verdict = iota
	Ask
	Refuse
)

func (v Verdict) String() string {
	return [...]string{"run", "ask", "refuse"}[v]
}

// Stable refusal codes.
const (
	CodePlanBlocked      = "plan_mode_blocked"
	CodeUnknownTool      = "unknown_tool"
	CodePermissionDenied = "permission_denied"
)

// Decision is the gate's verdict on one tool call.
type Decision struct {
	Verdict Verdict
	Code    string // refusal code when Verdict == Refuse
	Reason  string
	// ReadOnlyShell: run bash through the hardened read-only runner.
	ReadOnlyShell bool
}

// Gate is the one choke point every tool call passes. Plan is the immutable
// Plan stamp of the turn making the call.
type Gate struct {
	Plan  bool
	Mode  Mode
	Shell Shell // classifier for bash; nil refuses bash in Plan
	// Child marks the gate of a child agent's turn: its Plan refusals tell
	// it to report back, since only the root agent can propose a plan.
	Child bool
}

const planAdvice = " Plan mode allows only read-only investigation: finish with read-only tools and end your reply with a <proposed_plan> block."

// childPlanAdvice ends a Plan refusal of a child agent's call.
const childPlanAdvice = " Plan mode allows this child agent only read-only investigation: go on with read-only tools and report what you found (and what should change) to the agent that delegated the task."

// Decide returns the verdict for calling tool t (nil when unknown) with call.
// It never runs anything.
func (g Gate) Decide(t *Tool, call ToolCall) Decision {
	if t == nil {
		code := CodeUnknownTool
		if g.Plan {
			code = CodePlanBlocked
		}
		return Decision{Verdict: Refuse, Code: code, Reason: fmt.Sprintf("unknown tool %q.", call.Name) + g.advice()}
	}
	if g.Plan {
		return g.decidePlan(t, call)
	}
	if t.Meta.ReadOnly || t.Meta.SessionOnly || t.Meta.Delegates || g.Mode == ModeFullAuto {
		return Decision{Verdict: Run}
	}
	if t.Spec.Name == "bash" && g.Shell != nil {
		if ok, _ := g.Shell.Classify(bashCommand(call.Arguments)); ok {
			return Decision{Verdict: Run, ReadOnlyShell: true}
		}
	}
	if g.Mode == ModeEdits && t.Meta.Edits {
		return Decision{Verdict: Run}
	}
	return Decision{Verdict: Ask, Reason: fmt.Sprintf("%s needs your permission in %s mode", t.Spec.Name, g.Mode)}
}

// advice ends a refusal under Plan: what the refused agent should do instead.
func (g Gate) advice() string {
	switch {
	case g.Plan && g.Child:
		return childPlanAdvice
	case g.Plan:
		return planAdvice
	}
	return ""
}

func (g Gate) decidePlan(t *Tool, call ToolCall) Decision {
	refuse := func(why string) Decision {
		return Decision{Verdict: Refuse, Code: CodePlanBlocked, Reason: why + g.advice()}
	}
	switch {
	case t.Meta.ReadOnly, t.Meta.SessionOnly, t.Meta.Delegates:
		// A child agent inherits this turn's Plan stamp: its calls pass this gate.
		return Decision{Verdict: Run}
	case t.Spec.Name == "apply_patch":
		targets, err := PatchTargets(call.Arguments)
		if err != nil {
			return refuse(fmt.Sprintf("apply_patch refused: %v.", err))
		}
		for _, p := range targets {
			if p != "" && !IsWorkPath(p) {
				return refuse(fmt.Sprintf("apply_patch may only change work:// files in Plan; %q is a workspace file, so the whole patch was refused.", p))
			}
		}
		return Decision{Verdict: Run}
	case t.Spec.Name == "bash":
		if g.Shell == nil {
			return refuse("bash is not available in Plan.")
		}
		cmd := bashCommand(call.Arguments)
		if ok, reason := g.Shell.Classify(cmd); !ok {
			return refuse(fmt.Sprintf("bash command refused: %s.", reason))
		}
		return Decision{Verdict: Run, ReadOnlyShell: true}
	}
	return refuse(fmt.Sprintf("%s changes the workspace and is not allowed while Plan is on.", t.Spec.Name))
}

func bashCommand(args json.RawMessage) string {
	var a struct{ Command string }
	_ = json.Unmarshal(args, &a)
	return a.Command
}

// RefusalJSON is the structured tool result the model receives for a refusal.
func RefusalJSON(code, tool, reason string) string {
	b, _ := json.Marshal(map[string]any{
		"ok": false, "code": code, "fixable_by_llm": false, "tool": tool, "reason": reason,
	})
	return string(b)
}
