package session

import (
	"fmt"

	"planbridge/handoff"
)

// Workload names resolved to a model policy.
const (
	WorkloadPlanning       = "planning"
	WorkloadImplementation = "plan-implementation"
	WorkloadSummarization  = "summarization"
)

// ModelConfig is the model policy a client configures at initialize.
type ModelConfig struct {
	// Default is the session policy (model and effort; mode is per session).
	Default handoff.Policy `json:"default"`
	// Models is the catalog; empty means "whatever the engine takes".
	Models []handoff.Model `json:"models,omitempty"`
	// Workloads maps planning / plan-implementation / summarization to a
	// policy; missing fields inherit Default.
	Workloads map[string]handoff.Policy `json:"workloads,omitempty"`
	// GoalBudget is the default Goal token budget (0 = unlimited).
	GoalBudget int64 `json:"goal_budget,omitempty"`
	// ContextWindow is the model's window in tokens; when a request nears
	// it the session compacts first. 0 disables automatic compaction.
	ContextWindow int `json:"context_window,omitempty"`
}

// SetModels installs the model policy.
func (m *Manager) SetModels(cfg ModelConfig) error {
	for name, w := range cfg.Workloads {
		switch name {
		case WorkloadPlanning, WorkloadImplementation, WorkloadSummarization:
		default:
			return errorf(CodeInvalidParams, "unknown workload %q", name)
		}
		if w.Model != "" && len(cfg.Models) > 0 && !inCatalog(cfg.Models, w.Model) {
			return errorf(CodeInvalidParams, "workload %s names unknown model %q", name, w.Model)
		}
	}
	m.mu.Lock()
	m.models = cfg
	m.mu.Unlock()
	return nil
}

func inCatalog(models []handoff.Model, name string) bool {
	for _, x := range models {
		if x.Name == name {
			return true
		}
	}
	return false
}

func (m *Manager) modelConfig() ModelConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.models
}

func (m *Manager) sessionModel() (model, effort string) {
	c := m.modelConfig()
	return c.Default.Model, c.Default.Effort
}

// workload resolves a workload; missing fields inherit the session policy.
func (m *Manager) workload(name string) handoff.Policy {
	c := m.modelConfig()
	w := c.Workloads[name]
	if w.Model == "" {
		w.Model = c.Default.Model
		if w.Effort == "" {
			w.Effort = c.Default.Effort
		}
	}
	return w
}

// checkModel fails visibly for a model the catalog does not know: there is
// no silent fallback.
func (m *Manager) checkModel(name string) error {
	c := m.modelConfig()
	if name == "" || len(c.Models) == 0 || inCatalog(c.Models, name) {
		return nil
	}
	return fmt.Errorf("model %q is not available (known: %d models); nothing was sent", name, len(c.Models))
}
