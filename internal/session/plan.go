package session

import "planbridge/internal/agent"

// registry returns the tools every turn is offered.
func (m *Manager) registry() *agent.Registry {
	return agent.NewRegistry(agent.DefaultTools()...)
}

// newView returns the view filter for one model response.
func (s *Session) newView(plan bool) viewFilter { return passThrough{} }

// onResponse examines one completed model response.
func (s *Session) onResponse(plan bool, text string) {}

// reminder returns the Plan reminder appended to a Plan turn's prompt.
func reminder(full bool) string {
	if full {
		return "<plan_mode_reminder>Plan mode is on: investigate with read-only tools and finish with a <proposed_plan> block.</plan_mode_reminder>"
	}
	return "<plan_mode_reminder>Plan mode is still on; the contract given earlier applies.</plan_mode_reminder>"
}
