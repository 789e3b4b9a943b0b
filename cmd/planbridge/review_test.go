package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type cardWarning struct {
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// checkedPlan cites greet.txt (exists), docs/gone.md (missing), a new file
// a step creates, `Greeting` (in greet.go) and `NoSuchHelper` (nowhere).
const checkedPlan = "<proposed_plan>\n# Tidy the greeting\n\n## Summary\nTidy.\n\n## Key Changes\n" +
	"1. Change `Greeting` in greet.go and greet.txt\n" +
	"2. Create internal/farewell/bye.go\n" +
	"3. Update docs/gone.md and call `NoSuchHelper`\n\n" +
	"## Regression Coverage\n- internal/farewell/bye_test.go\n\n## Validation\n- `go test ./...`\n\n## Assumptions\n- none\n</proposed_plan>\n"

func TestPreApprovalChecksOnCardAndInFeedback(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "greet.go": "package g\n\nconst Greeting = \"hello\"\n",
		".gitignore": "build/\n", "build/cache.go": "// NoSuchHelper\n"})
	script := fmt.Sprintf(`[{"text": %q}, {"text": %q, "expect_contains": ["<plan_checks>", "docs/gone.md", "NoSuchHelper", "person_feedback"]}]`,
		checkedPlan, checkedPlan)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, v := proposeAndWait(t, ctx, p, ws)
	var card struct {
		Warnings []cardWarning `json:"warnings"`
	}
	if err := p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &card); err != nil {
		t.Fatal(err)
	}
	if len(card.Warnings) != 2 || card.Warnings[0].Kind != "missing_file" || card.Warnings[0].Subject != "docs/gone.md" ||
		card.Warnings[1].Kind != "unknown_identifier" || card.Warnings[1].Subject != "NoSuchHelper" || card.Warnings[1].Line != 9 {
		t.Fatalf("card warnings: %+v", card.Warnings)
	}
	// Warnings never block: feedback carries them to the model as a hint
	// (the script's second step fails the request unless it sees them).
	if err := p.c.Call(ctx, "approval/feedback", map[string]string{"session": s.ID, "attempt": v.Attempt, "text": "Looks thin."}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	v2 := getApproval(t, ctx, p.c, s.ID)
	if !v2.Pending {
		t.Fatalf("the revision was not proposed (the model did not get the hint?): %+v", v2)
	}
	for _, e := range p.c.Events() {
		if e.Kind == "error" && strings.Contains(string(e.Data), "expect") {
			t.Fatalf("model request failed: %s", e.Data)
		}
	}
}

// Version 1 and its revision; line 7 is the first Key Changes step.
const (
	planV1 = "# Tidy the greeting\n\n## Summary\nTidy.\n\n## Key Changes\n- Change hello to hi in greet.txt\n- Keep greet.go\n\n## Validation\n- `cat greet.txt`\n"
	planV2 = "# Tidy the greeting\n\n## Summary\nTidy.\n\n## Key Changes\n- Change hello to hey in greet.txt\n- Keep greet.go\n\n## Validation\n- `cat greet.txt`\n"
)

type versionCard struct {
	Pending     bool   `json:"pending"`
	Attempt     string `json:"attempt"`
	Version     int    `json:"version"`
	Revisions   int    `json:"revisions"`
	VersionPath string `json:"version_path"`
	Comments    []struct {
		Line    int    `json:"line"`
		NewLine int    `json:"new_line"`
		Text    string `json:"text"`
		Quote   string `json:"quote"`
		Status  string `json:"status"`
	} `json:"comments"`
}

func TestPlanVersionsDiffAndCarriedComments(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n", "greet.go": "package g\n"})
	wrap := func(b string) string { return "<proposed_plan>\n" + b + "</proposed_plan>\n" }
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Trying to rewrite history.", "tool_calls": [{"name": "write_file", "arguments": {"path": "work://plans/v1.md", "content": "forged"}}]},
	 {"text": %q, "expect_contains": ["On line 7", "Change hello to hi"]}]`, wrap(planV1), wrap(planV2))
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, script))
	s, _ := proposeAndWait(t, ctx, p, ws)
	var c1 versionCard
	if err := p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &c1); err != nil {
		t.Fatal(err)
	}
	if c1.Version != 1 || c1.Revisions != 0 || c1.VersionPath != "work://plans/v1.md" || len(c1.Comments) != 0 {
		t.Fatalf("v1 card %+v", c1)
	}
	if err := p.c.Call(ctx, "approval/diff", map[string]string{"session": s.ID}, nil); err == nil {
		t.Fatal("a diff of the only version")
	}
	err := p.c.Call(ctx, "approval/feedback", map[string]any{"session": s.ID, "attempt": c1.Attempt, "text": "Not hi.",
		"comments": []map[string]any{{"line": 7, "text": "hi is too short"}, {"line": 8, "text": "fine"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	var c2 versionCard
	if err := p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &c2); err != nil {
		t.Fatal(err)
	}
	if !c2.Pending || c2.Version != 2 || c2.Revisions != 1 || c2.VersionPath != "work://plans/v2.md" || len(c2.Comments) != 2 {
		t.Fatalf("v2 card %+v", c2)
	}
	if cm := c2.Comments[0]; cm.Status != "addressed" || cm.Line != 7 || cm.NewLine != 7 || cm.Quote != "- Change hello to hi in greet.txt" || cm.Text != "hi is too short" {
		t.Fatalf("line 7 comment %+v", cm)
	}
	if cm := c2.Comments[1]; cm.Status != "open" || cm.NewLine != 8 {
		t.Fatalf("line 8 comment %+v", cm)
	}
	var d struct {
		From, To int
		Diff     string
	}
	if err := p.c.Call(ctx, "approval/diff", map[string]string{"session": s.ID}, &d); err != nil {
		t.Fatal(err)
	}
	if d.From != 1 || d.To != 2 || !strings.Contains(d.Diff, "\n-- Change hello to hi in greet.txt\n+- Change hello to hey in greet.txt\n") ||
		!strings.HasPrefix(d.Diff, "--- work://plans/v1.md\n+++ work://plans/v2.md\n@@ -4,7 +4,7 @@\n") {
		t.Fatalf("diff %+v", d)
	}
	// The model's attempt to overwrite v1 was refused: v1 is as proposed.
	if b, _ := os.ReadFile(filepath.Join(state, "sessions", s.ID, "work", "plans", "v1.md")); string(b) != planV1 {
		t.Fatalf("v1.md = %q", b)
	}
}

const threeStepPlan = "<proposed_plan>\n# Greet three ways\n\n## Summary\nThree files.\n\n## Key Changes\n" +
	"1. Change hello to hi in a.txt\n2. Update `lib/b.go`\n3. Create docs/c.md\n\n" +
	"## Regression Coverage\n- none\n\n## Validation\n- `grep -q hi a.txt`\n- `make check`\n\n## Assumptions\n- none\n</proposed_plan>\n"

func call(name string, args any) string {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return string(b)
}

type reportJSON struct {
	Title   string `json:"title"`
	Hash    string `json:"hash"`
	Summary string `json:"summary"`
	Steps   []struct {
		ID     string   `json:"id"`
		Status string   `json:"status"`
		Files  []string `json:"files"`
	} `json:"steps"`
	Files []struct {
		Path    string `json:"path"`
		Status  string `json:"status"`
		Added   int    `json:"added"`
		Removed int    `json:"removed"`
		Outside bool   `json:"outside_plan"`
	} `json:"files"`
	Outside         []string `json:"outside_plan"`
	ScopeExtensions []string `json:"scope_extensions"`
	Validation      []struct {
		Command string `json:"command"`
		Ran     bool   `json:"ran"`
		Exit    *int   `json:"exit"`
	} `json:"validation"`
}

// TestImplementationReportEndToEnd: a three-step plan whose implementation
// also edits an unrelated file, in Here mode with files dirty at
// acceptance (one of which the implementation edits further).
func TestImplementationReportEndToEnd(t *testing.T) {
	t.Run("root", func(t *testing.T) { testImplementationReportEndToEnd(t, false) })
	t.Run("nobody", func(t *testing.T) { testImplementationReportEndToEnd(t, true) })
}

func testImplementationReportEndToEnd(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "hello\nworld\n", "lib/b.go": "package lib\n", "unrelated.txt": "keep\n", "notes.txt": "n\n"})
	// Uncommitted work before acceptance: not the implementation's.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\nworld\nlocal edit\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("n\nmine\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "scratch.txt"), []byte("untracked\n"), 0o644)
	impl := []string{
		call("update_plan_step", map[string]string{"step": "s1", "status": "in_progress"}),
		call("edit_file", map[string]string{"path": "a.txt", "old": "hello", "new": "hi"}),
		call("update_plan_step", map[string]string{"step": "s1", "status": "completed"}),
		call("update_plan_step", map[string]string{"step": "s2", "status": "in_progress"}),
		call("write_file", map[string]string{"path": "lib/b.go", "content": "package lib\n\nconst B = 1\n"}),
		call("edit_file", map[string]string{"path": "unrelated.txt", "old": "keep", "new": "changed"}),
		call("update_plan_step", map[string]string{"step": "s2", "status": "completed"}),
		call("update_plan_step", map[string]string{"step": "s3", "status": "in_progress"}),
		call("write_file", map[string]string{"path": "docs/c.md", "content": "# C\n"}),
		call("bash", map[string]string{"command": "grep -q hi a.txt"}),
		call("update_plan_step", map[string]string{"step": "s3", "status": "completed"}),
	}
	script := fmt.Sprintf(`[{"text": %q}, {"text": "Implementing.", "tool_calls": [%s]}, {"text": "Done."}]`, threeStepPlan, strings.Join(impl, ","))
	state := t.TempDir()
	sp := writeScript(t, script)
	p := startServeAs(t, unprivileged, state, []string{ws, filepath.Dir(sp)}, "--engine", "script", "--script", sp)
	var asked []string
	p.c.OnAsk(func(params json.RawMessage) any {
		var a struct{ Summary string }
		json.Unmarshal(params, &a)
		asked = append(asked, a.Summary)
		return map[string]bool{"allow": true}
	})
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "edits"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hi\nworld\nlocal edit\n" {
		t.Fatalf("a.txt %q", b)
	}
	// The report was built when the last step was done, and stored.
	var open struct {
		Report *reportJSON `json:"report"`
	}
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &open); err != nil {
		t.Fatal(err)
	}
	r := open.Report
	if r == nil {
		t.Fatal("no report in session/open")
	}
	if r.Title != "Greet three ways" || len(r.Hash) != 64 || r.Summary != "3/3 steps · 4 files · 1 outside the plan" {
		t.Fatalf("report head %+v", r)
	}
	files := map[string]string{}
	for _, f := range r.Files {
		files[f.Path] = fmt.Sprintf("%s +%d -%d %v", f.Status, f.Added, f.Removed, f.Outside)
	}
	want := map[string]string{"a.txt": "modified +1 -1 false", "lib/b.go": "modified +2 -0 false", "docs/c.md": "added +1 -0 false", "unrelated.txt": "modified +1 -1 true"}
	if fmt.Sprint(files) != fmt.Sprint(want) {
		t.Fatalf("files %v\nwant  %v", files, want)
	}
	if len(r.Outside) != 1 || r.Outside[0] != "unrelated.txt" {
		t.Fatalf("outside %q", r.Outside)
	}
	// Only the write outside the declared scope asked (edits mode).
	if len(asked) != 1 || !strings.Contains(asked[0], "extend the scope to unrelated.txt?") || fmt.Sprint(r.ScopeExtensions) != "[unrelated.txt]" {
		t.Fatalf("asked %q, extensions %q", asked, r.ScopeExtensions)
	}
	if fmt.Sprint(r.Steps[0].Files) != "[a.txt]" || fmt.Sprint(r.Steps[1].Files) != "[lib/b.go unrelated.txt]" || fmt.Sprint(r.Steps[2].Files) != "[docs/c.md]" {
		t.Fatalf("steps %+v", r.Steps)
	}
	if len(r.Validation) != 2 || !r.Validation[0].Ran || r.Validation[0].Exit == nil || *r.Validation[0].Exit != 0 || r.Validation[1].Ran {
		t.Fatalf("validation %+v", r.Validation)
	}
	// A file's diff is against the base: the local edit made before
	// acceptance is context, not a change.
	var fd struct{ Diff string }
	if err := p.c.Call(ctx, "report/fileDiff", map[string]string{"session": s.ID, "path": "a.txt"}, &fd); err != nil {
		t.Fatal(err)
	}
	if fd.Diff != "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-hello\n+hi\n world\n local edit\n" {
		t.Fatalf("a.txt diff %q", fd.Diff)
	}
	if err := p.c.Call(ctx, "report/fileDiff", map[string]string{"session": s.ID, "path": "docs/c.md"}, &fd); err != nil || !strings.HasPrefix(fd.Diff, "--- /dev/null\n+++ b/docs/c.md\n") {
		t.Fatalf("docs/c.md diff %q %v", fd.Diff, err)
	}
	for _, bad := range []string{"../outside", "/etc/passwd", "./a.txt"} {
		if err := p.c.Call(ctx, "report/fileDiff", map[string]string{"session": s.ID, "path": bad}, &fd); err == nil {
			t.Errorf("fileDiff %q accepted", bad)
		}
	}
	// The CLI reads the same stored report from the state directory.
	code, out, errOut := runBinary(t, "", "report", "--state-dir", state, "--json", s.ID)
	var cli reportJSON
	if code != 0 || json.Unmarshal([]byte(out), &cli) != nil || cli.Summary != r.Summary {
		t.Fatalf("report --json: %d %q %q", code, out, errOut)
	}
	code, out, _ = runBinary(t, "", "report", "--state-dir", state)
	if code != 0 || !strings.Contains(out, "unrelated.txt +1 -1  OUTSIDE THE PLAN") || !strings.Contains(out, "ran (exit 0)  grep -q hi a.txt") || !strings.Contains(out, "not run      make check") {
		t.Fatalf("report text: %d\n%s", code, out)
	}
	for _, bad := range []string{"../x", "a/b"} {
		if code, _, _ := runBinary(t, "", "report", "--state-dir", state, bad); code != 2 {
			t.Errorf("report %q: exit %d", bad, code)
		}
	}
	if code, _, errOut := runBinary(t, "", "report", "--state-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "no session") {
		t.Errorf("empty state dir: %d %q", code, errOut)
	}
}

const scopedPlan = "<proposed_plan>\n# Greet\n\n## Summary\nGreet.\n\n## Key Changes\n- Change hello to hi in greet.txt\n\n## Regression Coverage\n- none\n\n## Validation\n- `cat greet.txt`\n\n## Assumptions\n- none\n</proposed_plan>\n"

func TestScopeAsksInFullAutoAndExtends(t *testing.T) {
	t.Run("root", func(t *testing.T) { testScopeAsksInFullAutoAndExtends(t, false) })
	t.Run("nobody", func(t *testing.T) { testScopeAsksInFullAutoAndExtends(t, true) })
}

func testScopeAsksInFullAutoAndExtends(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	impl := []string{
		call("edit_file", map[string]string{"path": "greet.txt", "old": "hello", "new": "hi"}),
		call("write_file", map[string]string{"path": "extra/notes.md", "content": "n\n"}),
		call("write_file", map[string]string{"path": "extra/notes.md", "content": "n2\n"}),
	}
	script := fmt.Sprintf(`[{"text": %q}, {"text": "Implementing.", "tool_calls": [%s]}, {"text": "Done."}]`, scopedPlan, strings.Join(impl, ","))
	sp := writeScript(t, script)
	p := startServeAs(t, unprivileged, t.TempDir(), []string{ws, filepath.Dir(sp)}, "--engine", "script", "--script", sp)
	var asked []string
	p.c.OnAsk(func(params json.RawMessage) any {
		var a struct{ Summary string }
		json.Unmarshal(params, &a)
		asked = append(asked, a.Summary)
		return map[string]bool{"allow": true}
	})
	s, v := proposeAndWait(t, ctx, p, ws)
	var card struct {
		Attempt string   `json:"attempt"`
		Scope   []string `json:"scope"`
	}
	p.c.Call(ctx, "approval/get", map[string]string{"session": s.ID}, &card)
	if fmt.Sprint(card.Scope) != "[greet.txt]" {
		t.Fatalf("card scope %q", card.Scope)
	}
	// The person's edit of the scope row is checked and kept.
	if err := p.c.Call(ctx, "approval/update", map[string]any{"session": s.ID, "attempt": v.Attempt, "scope": []string{"../etc"}}, nil); err == nil {
		t.Fatal("a scope outside the workspace was accepted")
	}
	if err := p.c.Call(ctx, "approval/update", map[string]any{"session": s.ID, "attempt": v.Attempt, "scope": []string{"greet.txt", "docs/"}}, &card); err != nil || fmt.Sprint(card.Scope) != "[greet.txt docs]" {
		t.Fatalf("scope edit: %v %q", err, card.Scope)
	}
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "full-auto"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	// Full-auto ran the in-scope edit without asking, asked once for the
	// write outside the scope, and not again once the scope held it.
	if len(asked) != 1 || !strings.Contains(asked[0], "extend the scope to extra/notes.md?") {
		t.Fatalf("asked %q", asked)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "extra/notes.md")); string(b) != "n2\n" {
		t.Fatalf("notes %q", b)
	}
	var r struct {
		ScopeExtensions []string `json:"scope_extensions"`
		Outside         []string `json:"outside_plan"`
	}
	if err := p.c.Call(ctx, "report/get", map[string]string{"session": s.ID}, &r); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r.ScopeExtensions) != "[extra/notes.md]" || fmt.Sprint(r.Outside) != "[extra/notes.md]" {
		t.Fatalf("report %+v", r)
	}
}

func TestScopePausesUnattendedGoal(t *testing.T) {
	t.Run("root", func(t *testing.T) { testScopePausesUnattendedGoal(t, false) })
	t.Run("nobody", func(t *testing.T) { testScopePausesUnattendedGoal(t, true) })
}

func testScopePausesUnattendedGoal(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Editing.", "tool_calls": [%s]},
	 {"text": "First turn done."},
	 {"expect_contains": ["Continue working toward the active Goal."], "text": "More.", "tool_calls": [%s]},
	 {"text": "should not be reached"}]`, scopedPlan,
		call("edit_file", map[string]string{"path": "greet.txt", "old": "hello", "new": "hi"}),
		call("write_file", map[string]string{"path": "elsewhere.txt", "content": "x\n"}))
	sp := writeScript(t, script)
	p := startServeAs(t, unprivileged, t.TempDir(), []string{ws, filepath.Dir(sp)}, "--engine", "script", "--script", sp)
	p.c.OnAsk(func(json.RawMessage) any { t.Error("an unattended turn asked"); return map[string]bool{"allow": false} })
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 0, "")
	g := waitGoal(t, ctx, p.c, s.ID, "paused")
	if !strings.Contains(g.Goal.Reason, "outside the declared scope") || !strings.Contains(g.Goal.Reason, "elsewhere.txt") {
		t.Fatalf("goal %+v", g.Goal)
	}
	if _, err := os.Stat(filepath.Join(ws, "elsewhere.txt")); err == nil {
		t.Fatal("the unattended turn wrote outside the scope")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Fatalf("greet.txt %q", b)
	}
	var tr struct {
		Plan struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"plan"`
	}
	if err := p.c.Call(ctx, "session/tracking", map[string]string{"session": s.ID}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Plan.Status != "paused" || !strings.Contains(tr.Plan.Reason, "elsewhere.txt") {
		t.Fatalf("tracking %+v", tr)
	}
}
