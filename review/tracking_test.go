package review

import (
	"strings"
	"testing"
)

func items(spec ...string) []TodoItem {
	var out []TodoItem
	for _, s := range spec {
		id, rest, _ := strings.Cut(s, "|")
		content, status, _ := strings.Cut(rest, "|")
		out = append(out, TodoItem{ID: id, Content: content, Status: status})
	}
	return out
}

func TestValidateTodos(t *testing.T) {
	long := strings.Repeat("x", MaxTodoChars)
	many := make([]TodoItem, MaxTodos)
	for i := range many {
		many[i] = TodoItem{Content: "task", Status: TodoPending}
	}
	cases := []struct {
		name  string
		in    []TodoItem
		ok    bool
		check func([]TodoItem) bool
	}{
		{"empty clears", nil, true, func(o []TodoItem) bool { return len(o) == 0 }},
		{"ids generated", items("|a|pending", "|b|completed"), true, func(o []TodoItem) bool {
			return o[0].ID != "" && o[1].ID != "" && o[0].ID != o[1].ID
		}},
		{"ids kept", items("x|a|pending"), true, func(o []TodoItem) bool { return o[0].ID == "x" }},
		{"duplicates reassigned", items("x|a|pending", "x|b|pending"), true, func(o []TodoItem) bool {
			return o[0].ID == "x" && o[1].ID != "x" && o[1].ID != ""
		}},
		{"default status", items("|a|"), true, func(o []TodoItem) bool { return o[0].Status == TodoPending }},
		{"one in progress", items("|a|in_progress", "|b|pending"), true, nil},
		{"two in progress", items("|a|in_progress", "|b|in_progress"), false, nil},
		{"bad status", items("|a|done"), false, nil},
		{"blocked is not a todo status", items("|a|blocked"), false, nil},
		{"empty content", items("|  |pending"), false, nil},
		{"500 characters", items("|" + long + "|pending"), true, nil},
		{"501 characters", items("|" + long + "y|pending"), false, nil},
		{"500 runes of 2 bytes", items("|" + strings.Repeat("é", MaxTodoChars) + "|pending"), true, nil},
		{"40 items", many, true, nil},
		{"41 items", append(append([]TodoItem(nil), many...), TodoItem{Content: "one more"}), false, nil},
	}
	for _, c := range cases {
		in := append([]TodoItem(nil), c.in...)
		out, err := ValidateTodos(c.in)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "previous list is unchanged") {
			t.Errorf("%s: error does not say the list is unchanged: %v", c.name, err)
		}
		if c.check != nil && !c.check(out) {
			t.Errorf("%s: got %+v", c.name, out)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("%s: input modified", c.name)
			}
		}
	}
}

func TestGerund(t *testing.T) {
	for in, want := range map[string]string{
		"Add a flag":         "Adding a flag",
		"Change the greeter": "Changing the greeter",
		"Run the tests":      "Running the tests",
		"Set up CI":          "Setting up CI",
		"update docs":        "updating docs",
		"Tie it off":         "Tying it off",
		"See what breaks":    "Seeing what breaks",
		"Parse flags":        "Parsing flags",
		"`go vet` passes":    "`go vet` passes",
		"Fix":                "Fixing",
	} {
		if got := Gerund(in); got != want {
			t.Errorf("Gerund(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStepsAndCarry(t *testing.T) {
	body := "# T\n\n## Key Changes\n- Add the flag\n- Print the name\n- Update the docs\n"
	steps, clipped := StepsFromProposal(body)
	if len(steps) != 3 || clipped || steps[0].ID != "s1" || steps[1].Gerund != "Printing the name" {
		t.Fatalf("steps %+v", steps)
	}
	p := &TrackedPlan{Title: "T", Artifact: "work://plans/a.md", Steps: steps}
	p.Steps[0].Status = StepCompleted
	p.Steps[1].Status = StepSkipped
	c := p.Carry()
	if !strings.Contains(c, "2 of 3 steps are finished") || strings.Contains(c, "Add the flag") || strings.Contains(c, "Print the name") || !strings.Contains(c, "Update the docs") {
		t.Fatalf("carry %q", c)
	}
}
