package handoff

import (
	"encoding/json"
	"testing"
)

func TestModelConfig(t *testing.T) {
	cat := []Model{{Name: "big"}, {Name: "small", Efforts: []string{"low"}}}
	base := ModelConfig{Default: Policy{Model: "big", Effort: "high"}, Models: cat}
	with := func(w map[string]Policy) ModelConfig { c := base; c.Workloads = w; return c }

	t.Run("validate", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cfg  ModelConfig
			want string
		}{
			{"none", base, ""},
			{"known workloads", with(map[string]Policy{WorkloadPlanning: {Model: "small"}, WorkloadSummarization: {Effort: "low"}, WorkloadImplementation: {}}), ""},
			{"unknown workload", with(map[string]Policy{"coding": {}}), `unknown workload "coding"`},
			{"unknown model", with(map[string]Policy{WorkloadPlanning: {Model: "huge"}}), `workload planning names unknown model "huge"`},
			{"any model without a catalog", ModelConfig{Workloads: map[string]Policy{WorkloadPlanning: {Model: "huge"}}}, ""},
		} {
			err := tc.cfg.Validate()
			if got := map[bool]string{true: ""}[err == nil]; err != nil {
				got = err.Error()
				if got != tc.want {
					t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
				}
			} else if tc.want != "" {
				t.Errorf("%s: accepted, want %q", tc.name, tc.want)
			}
		}
	})

	t.Run("workload", func(t *testing.T) {
		cfg := with(map[string]Policy{
			WorkloadPlanning:       {Model: "small"}, // its own model, no effort: none inherited
			WorkloadSummarization:  {Effort: "low"},  // no model: the session's, its own effort
			WorkloadImplementation: {Model: "small", Effort: "low", Mode: "edits"},
		})
		for _, tc := range []struct {
			name string
			want Policy
		}{
			{WorkloadPlanning, Policy{Model: "small"}},
			{WorkloadSummarization, Policy{Model: "big", Effort: "low"}},
			{WorkloadImplementation, Policy{Model: "small", Effort: "low", Mode: "edits"}},
			{"unset", Policy{Model: "big", Effort: "high"}},
		} {
			if got := cfg.Workload(tc.name); got != tc.want {
				t.Errorf("Workload(%s) = %+v, want %+v", tc.name, got, tc.want)
			}
		}
	})

	t.Run("check", func(t *testing.T) {
		for _, tc := range []struct {
			cfg   ModelConfig
			model string
			want  string
		}{
			{base, "big", ""},
			{base, "", ""},
			{ModelConfig{}, "anything", ""},
			{base, "huge", `model "huge" is not available (known: 2 models); nothing was sent`},
		} {
			err := tc.cfg.Check(tc.model)
			if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
				t.Errorf("Check(%q) = %v, want %q", tc.model, err, tc.want)
			}
		}
	})

	t.Run("near the window", func(t *testing.T) {
		for _, tc := range []struct {
			window, size int
			want         bool
		}{
			{0, 1 << 30, false}, // no window: never
			{1000, 3200, false}, // 800 tokens: exactly 80 %
			{1000, 3204, true},  // 801 tokens
			{1000, 3203, false}, // still 800 tokens (4 bytes a token, rounded down)
			{-5, 1 << 30, false},
		} {
			if got := (ModelConfig{ContextWindow: tc.window}).NearWindow(tc.size); got != tc.want {
				t.Errorf("window %d, %d bytes: %v, want %v", tc.window, tc.size, got, tc.want)
			}
		}
	})

	t.Run("wire form", func(t *testing.T) {
		var cfg ModelConfig
		raw := `{"default":{"model":"big","effort":"high","mode":""},"models":[{"name":"big"}],"workloads":{"planning":{"model":"big","effort":"","mode":""}},"goal_budget":5,"context_window":100}`
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.GoalBudget != 5 || cfg.ContextWindow != 100 || cfg.Workload(WorkloadPlanning).Model != "big" {
			t.Fatalf("decoded %+v", cfg)
		}
	})
}

func TestModelConfigTurn(t *testing.T) {
	cfg := ModelConfig{Default: Policy{Model: "big", Effort: "high", Mode: "ignored"},
		Workloads: map[string]Policy{WorkloadPlanning: {Model: "planner", Mode: "ignored too"}}}
	inherit := ModelConfig{Default: Policy{Model: "big", Effort: "high"}, Workloads: map[string]Policy{WorkloadPlanning: {Effort: "low"}}}
	scoped := &Policy{Model: "impl", Effort: "medium", Mode: "edits"}
	for _, tc := range []struct {
		name   string
		cfg    ModelConfig
		plan   bool
		scoped *Policy
		want   Policy
	}{
		{"outside Plan: the default, the session's mode", cfg, false, nil, Policy{Model: "big", Effort: "high", Mode: "ask"}},
		{"Plan: the planning workload, its effort alone", cfg, true, nil, Policy{Model: "planner", Mode: "ask"}},
		{"Plan: a workload naming no model inherits the default's", inherit, true, nil, Policy{Model: "big", Effort: "low", Mode: "ask"}},
		{"scoped wins, mode included", cfg, false, scoped, *scoped},
		{"scoped wins in Plan too", cfg, true, scoped, *scoped},
		{"empty config", ModelConfig{}, true, nil, Policy{Mode: "ask"}},
	} {
		if got := tc.cfg.Turn(tc.plan, "ask", tc.scoped); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
