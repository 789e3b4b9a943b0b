package agent

import (
	"fmt"
	"strings"
)

// EngineConfig names and configures a model engine, as given on the command
// line or in initialize params.
type EngineConfig struct {
	Kind    string `json:"kind"`   // "script", "openai", "anthropic" or "acp"
	Script  string `json:"script"` // script file (kind script)
	BaseURL string `json:"base_url,omitempty"`
	Model   string `json:"model,omitempty"`
	APIKey  string `json:"api_key,omitempty"` // never persisted
	// Command and Env start the agent of kind acp.
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// NewEngine builds the engine cfg describes. For openai and anthropic,
// fields left empty come from env (see [OpenAIConfigFromEnv] and
// [AnthropicConfigFromEnv]).
func NewEngine(cfg EngineConfig, getenv func(string) string) (Engine, error) {
	switch cfg.Kind {
	case "script":
		if cfg.Script == "" {
			return nil, fmt.Errorf("engine script needs a script file")
		}
		return LoadScript(cfg.Script)
	case "openai":
		oc := OpenAIConfigFromEnv(getenv)
		if cfg.BaseURL != "" {
			oc.BaseURL = cfg.BaseURL
		}
		if cfg.Model != "" {
			oc.Model = cfg.Model
		}
		if cfg.APIKey != "" {
			oc.APIKey = cfg.APIKey
		}
		return NewOpenAI(oc)
	case "anthropic":
		ac := AnthropicConfigFromEnv(getenv)
		if cfg.BaseURL != "" {
			ac.BaseURL = cfg.BaseURL
		}
		if cfg.Model != "" {
			ac.Model = cfg.Model
		}
		if cfg.APIKey != "" {
			ac.APIKey = cfg.APIKey
		}
		return NewAnthropic(ac)
	case "acp":
		cmd := cfg.Command
		if len(cmd) == 0 {
			cmd = strings.Fields(getenv("PLANBRIDGE_ACP_COMMAND"))
		}
		return NewACP(ACPConfig{Command: cmd, Env: cfg.Env})
	}
	return nil, fmt.Errorf("unknown engine %q (want script, openai, anthropic or acp)", cfg.Kind)
}

// firstEnv returns the first of names that getenv gives a nonblank value,
// trimmed, or "". The engines' *ConfigFromEnv list planbridge's own
// variable before the conventional one.
func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}
