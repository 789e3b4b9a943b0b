package session

import "planbridge/handoff"

// Workload names resolved to a model policy ([handoff.ModelConfig]).
const (
	WorkloadPlanning       = handoff.WorkloadPlanning
	WorkloadImplementation = handoff.WorkloadImplementation
	WorkloadSummarization  = handoff.WorkloadSummarization
)

// ModelConfig is the model policy a client configures at initialize.
type ModelConfig = handoff.ModelConfig

// SetModels installs the model policy, refusing one that does not
// validate ([handoff.ModelConfig.Validate]) with nothing changed.
func (m *Manager) SetModels(cfg ModelConfig) error {
	if err := cfg.Validate(); err != nil {
		return errorf(CodeInvalidParams, "%v", err)
	}
	m.mu.Lock()
	m.models = cfg
	m.mu.Unlock()
	return nil
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

func (m *Manager) workload(name string) handoff.Policy { return m.modelConfig().Workload(name) }

func (m *Manager) checkModel(name string) error { return m.modelConfig().Check(name) }
