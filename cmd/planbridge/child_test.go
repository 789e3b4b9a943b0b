package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPlanChildAgentKeepsPlanLimits: a Plan turn delegates to a child agent;
// the child's write and mutating Bash are refused under the parent's Plan
// stamp (and counted), its read runs, its prose never becomes a proposal,
// and it cannot delegate further.
func TestPlanChildAgentKeepsPlanLimits(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "alpha\n"})
	before := snapshot(t, ws)
	script := fmt.Sprintf(`[
	 {"text": "Delegating.\n", "tool_calls": [{"name": "agent", "arguments": {"task": "Inspect a.txt and fix it."}}]},
	 {"text": "Child looking.\n", "tool_calls": [
	   {"name": "read_file", "arguments": {"path": "a.txt"}},
	   {"name": "write_file", "arguments": {"path": "a.txt", "content": "child edit"}},
	   {"name": "bash", "arguments": {"command": "rm a.txt"}},
	   {"name": "agent", "arguments": {"task": "grandchild"}}]},
	 {"text": "Report: a.txt says alpha.\n<proposed_plan>\n# Child plan must not count\n- x\n</proposed_plan>\n"},
	 {"expect_contains": ["Report: a.txt says alpha."], "text": %q}]`,
		"Thanks.\n<proposed_plan>\n# Parent plan\n- keep alpha\n</proposed_plan>\n")
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan check a.txt"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	var titles []string
	blocked := 0
	for _, e := range p.c.Events() {
		var d map[string]any
		json.Unmarshal(e.Data, &d)
		switch e.Kind {
		case "proposal":
			titles = append(titles, d["title"].(string))
		case "blocked":
			blocked++
		case "error":
			t.Errorf("error: %s", e.Data)
		case "text":
			if strings.Contains(d["delta"].(string), "Child") {
				t.Errorf("child prose reached the view: %v", d["delta"])
			}
		}
	}
	if strings.Join(titles, ",") != "Parent plan" {
		t.Errorf("proposals %v", titles)
	}
	if blocked != 2 {
		t.Errorf("blocked %d, want 2 (child write_file and rm)", blocked)
	}
	var st struct {
		BlockedTotal int64 `json:"blocked_total"`
	}
	p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st)
	if st.BlockedTotal != 2 {
		t.Errorf("blocked_total %d", st.BlockedTotal)
	}
	if after := snapshot(t, ws); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("the workspace changed under a Plan child agent")
	}
}

// TestPlanChildAgentGetsChildPlanWording: a child agent started under Plan
// is told it is under Plan in words for a child (investigate, report back),
// and its refusals never ask it for a <proposed_plan> block, which only the
// root agent can write.
func TestPlanChildAgentGetsChildPlanWording(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "alpha\n"})
	script := fmt.Sprintf(`[
	 {"text": "Delegating.\n", "tool_calls": [{"name": "agent", "arguments": {"task": "Inspect a.txt."}}]},
	 {"expect_contains": ["Plan mode is on", "report"], "expect_absent": ["<proposed_plan>"], "text": "Child looking.\n", "tool_calls": [
	   {"name": "write_file", "arguments": {"path": "a.txt", "content": "child edit"}},
	   {"name": "no_such_tool", "arguments": {}},
	   {"name": "bash", "arguments": {"command": "rm a.txt"}}]},
	 {"expect_contains": ["report what you found"], "expect_absent": ["<proposed_plan>"], "text": "Report: a.txt says alpha.\n"},
	 {"expect_contains": ["Report: a.txt says alpha."], "text": %q}]`,
		"Thanks.\n<proposed_plan>\n# Parent plan\n- keep alpha\n</proposed_plan>\n")
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan check a.txt"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	blocked := 0
	for _, e := range p.c.Events() {
		switch e.Kind {
		case "error":
			t.Errorf("error: %s", e.Data)
		case "blocked":
			blocked++
			if strings.Contains(string(e.Data), "proposed_plan") {
				t.Errorf("a child's refusal asks for a plan: %s", e.Data)
			}
		}
	}
	if blocked != 3 {
		t.Errorf("%d refusals, want 3", blocked)
	}
	if v := getApproval(t, ctx, p.c, s.ID); !v.Pending || v.Title != "Parent plan" {
		t.Errorf("approval %+v", v)
	}
}
