package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// CodeProtectedPath refuses a write to a repository control file or
	// planbridge's project configuration where no person can confirm it.
	CodeProtectedPath = "protected_path"
	// CodePublishedPlan refuses a model write under work://plans/.
	CodePublishedPlan = "published_plan"
	// CodeOutsideScope refuses, where no person can answer, a write
	// outside the declared scope of the implementation ([Gate.Scope]).
	CodeOutsideScope = "outside_scope"
	// CodeUnwatched refuses a call whose undeclared writes a [Watcher]
	// could not prepare to observe.
	CodeUnwatched = "unwatched"
)

// Decision is the gate's verdict on one tool call.
type Decision struct {
	Verdict Verdict
	Code    string // refusal code when Verdict == Refuse
	Reason  string
	// ReadOnlyShell: run bash through the hardened read-only runner.
	ReadOnlyShell bool
	// Protected: the call writes a protected path; once the person allows
	// it, the executor may write it ([Env.AllowProtected]).
	Protected bool
	// OutsideScope are the workspace-relative paths the call writes outside
	// [Gate.Scope]: allowing the call extends the scope to them.
	OutsideScope []string
}

// A WriteScope is the declared scope of an implementation: the workspace
// paths (relative, slash-separated) it may write without asking.
type WriteScope interface {
	Allows(rel string) bool
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
	// Roots resolves the paths file tools write ([Meta.Writes]).
	Roots Roots
	// Protected are further directories of project configuration
	// (skills folders outside the workspace).
	Protected []string
	// Unattended marks a turn no person can answer for: a prompt sent from
	// a share link, an automatic Goal continuation. A write that would ask
	// because it touches a protected path is refused instead.
	Unattended bool
	// Scope, when set, is the declared scope of the implementation: a
	// write of a workspace file outside it asks the person in every
	// permission mode ("extend the scope to PATH?"), and is refused with
	// [CodeOutsideScope] where no person can answer.
	Scope WriteScope
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
	if d, ok := g.decideWrites(t, call); ok {
		return d
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
	case t.Meta.Writes != nil:
		// File tools write only the session's scratch area in Plan.
		name := t.Spec.Name
		targets, err := t.Meta.Writes(call.Arguments)
		if err != nil {
			return refuse(fmt.Sprintf("%s refused: %v.", name, err))
		}
		if len(targets) == 0 {
			return refuse(fmt.Sprintf("%s refused: it names no file.", name))
		}
		for _, p := range targets {
			if !IsWorkPath(p) {
				return refuse(fmt.Sprintf("%s of the workspace file %q is not allowed while Plan is on (in Plan only work:// files change: keep notes under %s), so the whole call was refused.", name, p, NotesDir))
			}
			w, err := g.Roots.ClassifyWrite(p, g.Protected...)
			if err != nil {
				return refuse(fmt.Sprintf("%s refused: %v.", name, err))
			}
			if w.Class == WritePublished {
				return refuse(fmt.Sprintf("%s refused: %q is the published plan, which belongs to the session once proposed; keep notes under %s and revise the plan by proposing again.", name, p, NotesDir))
			}
			if w.Class != WriteNotes {
				return refuse(fmt.Sprintf("%s may only change work:// files in Plan; %q is not one, so the whole call was refused.", name, p))
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

// NotesDir is the model's own scratch area under work://.
const NotesDir = WorkScheme + "notes/"

// decideWrites applies the write-side path policy outside Plan: the
// published plan is never the model's to change, and a protected path
// always asks the person (with a warning) in every permission mode, or is
// refused where no person can answer. ok is false when the call's writes
// leave the decision to the permission mode. A call whose targets cannot be
// read or resolved is left to its executor, which resolves them again and
// fails the same way (and refuses protected paths on its own).
func (g Gate) decideWrites(t *Tool, call ToolCall) (Decision, bool) {
	if t.Meta.Writes == nil {
		return Decision{}, false
	}
	targets, err := t.Meta.Writes(call.Arguments)
	if err != nil {
		return Decision{}, false
	}
	var protected []WriteTarget
	var outside []string
	for _, p := range targets {
		w, err := g.Roots.ClassifyWrite(p, g.Protected...)
		if err != nil {
			continue
		}
		switch w.Class {
		case WritePublished:
			return Decision{Verdict: Refuse, Code: CodePublishedPlan, Reason: fmt.Sprintf(
				"%s refused: %q is the published plan, which belongs to the session; keep notes under %s.", t.Spec.Name, p, NotesDir)}, true
		case WriteProtected:
			protected = append(protected, w)
		case WriteWorkspace:
			if g.Scope != nil && w.Rel != "" && !g.Scope.Allows(w.Rel) && !slices.Contains(outside, w.Rel) {
				outside = append(outside, w.Rel)
			}
		}
	}
	if len(protected) == 0 && len(outside) > 0 {
		list := strings.Join(outside, ", ")
		if g.Unattended {
			return Decision{Verdict: Refuse, Code: CodeOutsideScope, OutsideScope: outside, Reason: fmt.Sprintf(
				"%s refused: %s is outside the scope declared by the accepted plan, and no person can extend it from here; the implementation pauses until the person extends the scope or resumes it.", t.Spec.Name, list)}, true
		}
		return Decision{Verdict: Ask, OutsideScope: outside, Reason: fmt.Sprintf(
			"%s writes %s, outside the scope declared by the accepted plan: extend the scope to %s?", t.Spec.Name, list, list)}, true
	}
	if len(protected) == 0 {
		return Decision{}, false
	}
	var what []string
	for _, w := range protected {
		what = append(what, fmt.Sprintf("%s (%s)", w.Path, w.Why))
	}
	list := strings.Join(what, "; ")
	if g.Unattended {
		return Decision{Verdict: Refuse, Code: CodeProtectedPath, Reason: fmt.Sprintf(
			"%s refused: it writes %s, and no person can confirm that from here (a share link or an unattended Goal turn).", t.Spec.Name, list)}, true
	}
	return Decision{Verdict: Ask, Protected: true, Reason: fmt.Sprintf(
		"WARNING: %s writes %s. This always needs your confirmation, whatever the permission mode: allow it only if you asked for exactly this change.", t.Spec.Name, list)}, true
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
