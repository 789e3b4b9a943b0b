package handoff

import "fmt"

// Workload names resolved to a model policy ([ModelConfig.Workload]).
const (
	WorkloadPlanning       = "planning"
	WorkloadImplementation = "plan-implementation"
	WorkloadSummarization  = "summarization"
)

// ModelConfig is the model policy a client configures at initialize.
type ModelConfig struct {
	// Default is the session policy (model and effort; mode is per session).
	Default Policy `json:"default"`
	// Models is the catalog; empty means "whatever the engine takes".
	Models []Model `json:"models,omitempty"`
	// Workloads maps planning / plan-implementation / summarization to a
	// policy; missing fields inherit Default.
	Workloads map[string]Policy `json:"workloads,omitempty"`
	// GoalBudget is the default Goal token budget (0 = unlimited).
	GoalBudget int64 `json:"goal_budget,omitempty"`
	// ContextWindow is the model's window in tokens; when a request nears
	// it the session compacts first. 0 disables automatic compaction.
	ContextWindow int `json:"context_window,omitempty"`
}

// Validate refuses a workload other than the three and, with a catalog, a
// workload naming a model the catalog does not list.
func (c ModelConfig) Validate() error {
	for name, w := range c.Workloads {
		switch name {
		case WorkloadPlanning, WorkloadImplementation, WorkloadSummarization:
		default:
			return fmt.Errorf("unknown workload %q", name)
		}
		if w.Model != "" && len(c.Models) > 0 && !c.known(w.Model) {
			return fmt.Errorf("workload %s names unknown model %q", name, w.Model)
		}
	}
	return nil
}

// Workload resolves workload name: a workload that names no model takes
// the session policy's model, and its effort too unless it names one.
func (c ModelConfig) Workload(name string) Policy {
	w := c.Workloads[name]
	if w.Model == "" {
		w.Model = c.Default.Model
		if w.Effort == "" {
			w.Effort = c.Default.Effort
		}
	}
	return w
}

// Turn is the policy one root turn runs under: scoped, an
// implementation's policy for this request only, when the turn carries
// one (its mode too); otherwise the planning workload's model and effort
// in Plan, the session policy's outside it, with the session's mode.
func (c ModelConfig) Turn(plan bool, mode string, scoped *Policy) Policy {
	if scoped != nil {
		return *scoped
	}
	p := Policy{Model: c.Default.Model, Effort: c.Default.Effort}
	if plan {
		p = c.Workload(WorkloadPlanning)
	}
	p.Mode = mode
	return p
}

// Check fails visibly for a model the catalog does not know: there is no
// silent fallback. No model, or no catalog, passes.
func (c ModelConfig) Check(name string) error {
	if name == "" || len(c.Models) == 0 || c.known(name) {
		return nil
	}
	return fmt.Errorf("model %q is not available (known: %d models); nothing was sent", name, len(c.Models))
}

// autoCompactRatio is the share of the context window a request may fill
// before the context is compacted first.
const autoCompactRatio = 0.8

// NearWindow reports whether a request of size bytes (4 bytes a token)
// fills more than 80 % of the context window, so the context is compacted
// before it is sent. Without a window it never does.
func (c ModelConfig) NearWindow(size int) bool {
	return c.ContextWindow > 0 && float64(size/4) > autoCompactRatio*float64(c.ContextWindow)
}

func (c ModelConfig) known(name string) bool {
	for _, x := range c.Models {
		if x.Name == name {
			return true
		}
	}
	return false
}
