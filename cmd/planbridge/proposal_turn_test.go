package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"planbridge/handoff"
	"planbridge/proposal"
	"planbridge/rpc"
)

// TestPlanTurnProseFencedExampleAndPlan: prose, a fenced example of the
// tags, then a real plan → one proposal with the right title; the view shows
// the prose and the example but never the real block's tags.
func TestPlanTurnProseFencedExampleAndPlan(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	response := "Here is how a plan looks:\n\n```\n<proposed_plan>\n# Example only\n</proposed_plan>\n```\n\nAnd the real one.<proposed_plan>\n# Real plan title\n\n## Summary\n- Do it.\n</proposed_plan>\nThanks.\n"
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, fmt.Sprintf(`[{"text": %q}]`, response)))
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan go"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	var view strings.Builder
	proposals := 0
	var title string
	for _, e := range p.c.Events() {
		var d map[string]any
		json.Unmarshal(e.Data, &d)
		switch e.Kind {
		case "text":
			view.WriteString(d["delta"].(string))
		case "proposal":
			proposals++
			title, _ = d["title"].(string)
		case "diagnostic":
			t.Errorf("unexpected diagnostic %v", d)
		}
	}
	if proposals != 1 || title != "Real plan title" {
		t.Fatalf("%d proposals, title %q", proposals, title)
	}
	v := view.String()
	if !strings.Contains(v, "# Example only") || !strings.Contains(v, "And the real one.") || !strings.Contains(v, "Thanks.") {
		t.Errorf("view lost prose: %q", v)
	}
	if strings.Contains(v, "Real plan title") || strings.Count(v, "<proposed_plan>") != 1 {
		t.Errorf("view shows the real block: %q", v)
	}
	if want := proposal.Extract(response).Visible; v != want {
		t.Errorf("streamed view %q != extracted view %q", v, want)
	}
	b, err := os.ReadFile(filepath.Join(p.stateDirOf(t), "sessions", s.ID, "work", "plans", "current.md"))
	if err != nil || !strings.HasPrefix(string(b), "# Real plan title") {
		t.Errorf("work://plans/current.md = %q, %v", b, err)
	}
}

// TestMalformedProposalWarnsAndStaysInPlan: an unterminated block gives one
// warning, no proposal, and Plan stays on.
func TestMalformedProposalWarnsAndStaysInPlan(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, `[{"text": "Plan:\n<proposed_plan>\n# Half a plan\n- step\n"}]`))
	s := createSession(t, ctx, p.c, t.TempDir())
	p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan go"}, nil)
	waitTurnEnd(t, ctx, p.c, 1)
	warnings := 0
	for _, e := range p.c.Events() {
		if e.Kind == "diagnostic" && strings.Contains(string(e.Data), "warning") {
			warnings++
		}
		if e.Kind == "proposal" {
			t.Error("a malformed block became a proposal")
		}
	}
	var st struct {
		Plan           bool
		ProposalStatus string `json:"proposal_status"`
	}
	p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st)
	if warnings != 1 || !st.Plan || st.ProposalStatus != "none" {
		t.Fatalf("warnings=%d status=%+v", warnings, st)
	}
}

// TestReminderCadence: the first Plan turn of an episode carries the full
// contract, later ones a one-line reference; an interrupted dispatch does not
// count as delivered; leaving and re-entering Plan re-arms the full text.
func TestReminderCadence(t *testing.T) {
	ctx := ctxT(t)
	full := "## Regression Coverage" // part of the template only the full reminder has
	script := fmt.Sprintf(`[
	 {"expect_contains": [%q], "text": "%s", "delay_ms": 30},
	 {"expect_contains": [%q], "text": "first\n"},
	 {"expect_last_user_absent": [%q], "expect_contains": [%q], "text": "second\n"},
	 {"expect_contains": [%q], "text": "re-armed\n"}]`,
		full, strings.Repeat("slow ", 200), full, full, proposal.ReminderRef()[:30], full)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s := createSession(t, ctx, p.c, t.TempDir())
	submit := func(text string) {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	submit("/plan investigate")
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" }); err != nil {
		t.Fatal(err)
	}
	p.c.Call(ctx, "session/interrupt", map[string]string{"session": s.ID}, nil)
	waitTurnEnd(t, ctx, p.c, 1)
	submit("again") // the cancelled dispatch left the full template armed
	waitTurnEnd(t, ctx, p.c, 2)
	submit("and again")
	waitTurnEnd(t, ctx, p.c, 3)
	submit("/plan off")
	submit("/plan back in")
	waitTurnEnd(t, ctx, p.c, 4)
	for _, e := range p.c.Events() {
		if e.Kind == "error" {
			t.Errorf("script expectation failed: %s", e.Data)
		}
	}
}

// TestSkillsRevalidatedAtKickoff: a selected skill that disappears before the
// kickoff means no request and a retryable record; restoring it and
// retrying runs the implementation once.
func TestSkillsRevalidatedAtKickoff(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	skill := filepath.Join(ws, ".planbridge", "skills", "careful", "SKILL.md")
	os.MkdirAll(filepath.Dir(skill), 0o755)
	body := "---\nname: careful\ndescription: Be careful.\n---\nDouble-check every edit.\n"
	os.WriteFile(skill, []byte(body), 0o644)
	script := fmt.Sprintf(`[{"text": %q},
	 {"expect_contains": ["Double-check every edit."], "text": "ok\n", "tool_calls": [{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}}]},
	 {"text": "done\n"}]`, planText)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, v := proposeAndWait(t, ctx, p, ws)
	var card struct {
		Skills []struct{ Name, Path string } `json:"skills"`
	}
	p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &card)
	if len(card.Skills) != 1 || card.Skills[0].Name != "careful" {
		t.Fatalf("skills offered: %+v", card.Skills)
	}
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "skills", Skills: []string{card.Skills[0].Path}})
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	os.Remove(skill)
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && strings.Contains(string(e.Data), "failed") && strings.Contains(string(e.Data), "missing")
	}); err != nil {
		t.Fatal(err)
	}
	for _, e := range p.c.Events() {
		if e.Kind == "user" && strings.Contains(string(e.Data), "Implement accepted plan") {
			t.Fatal("a kickoff was sent with a missing skill")
		}
	}
	os.WriteFile(skill, []byte(body), 0o644)
	if err := p.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`)
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Fatalf("greet.txt %q", b)
	}
}
