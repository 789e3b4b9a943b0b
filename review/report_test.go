package review

import (
	"slices"
	"strings"
	"testing"
)

const reportPlan = "# Three steps\n\n## Key Changes\n1. Edit a.txt\n2. Edit `pkg/b.go`\n3. Document it in docs/\n\n## Validation\n- `go test ./pkg/...`\n- cat a.txt\n```sh\nmake lint\n```\n"

func TestBuildReport(t *testing.T) {
	in := Input{Title: "Three steps", Hash: "h", Body: reportPlan, Base: "c0",
		Steps: []StepState{{ID: "s1", Text: "Edit a.txt", Status: "completed"}, {ID: "s2", Text: "Edit `pkg/b.go`", Status: "completed"},
			{ID: "s3", Text: "Document it in docs/", Status: "pending"}, {ID: "s4", Text: "Tidy", Status: "completed"}},
		Changes: []FileChange{
			{Path: "a.txt", Before: []byte("1\n2\n"), After: []byte("1\nx\ny\n"), Existed: true, Exists: true},
			{Path: "pkg/b.go", Before: nil, After: []byte("package b\n"), Exists: true},
			{Path: "unrelated.txt", Before: []byte("u\n"), Existed: true},
			{Path: "tmp/written.txt", After: []byte("w\n"), Exists: true},
		},
		Events: []ToolEvent{
			{Tool: "edit_file", Paths: []string{"a.txt"}, Step: "s1", OK: true},
			{Tool: "write_file", Paths: []string{"tmp/written.txt"}, Step: "s4", OK: true},
			{Tool: "bash", Command: "cd pkg &&  go test ./pkg/...", Exit: 1, Step: "s2"},
			{Tool: "bash", Command: "go test ./pkg/...", Exit: 0},
			{Tool: "bash", Command: "echo cat a.txt"},
		},
		ScopeExtensions: []string{"tmp/written.txt"},
	}
	r := Build(in)
	if !slices.Equal(r.Outside, []string{"tmp/written.txt", "unrelated.txt"}) {
		t.Fatalf("outside %q", r.Outside)
	}
	if r.Files[0].Path != "a.txt" || r.Files[0].Added != 2 || r.Files[0].Removed != 1 || r.Files[0].Status != "modified" {
		t.Fatalf("a.txt %+v", r.Files[0])
	}
	if f := r.Files[3]; f.Path != "unrelated.txt" || f.Status != "deleted" || f.Removed != 1 || !f.Outside {
		t.Fatalf("unrelated %+v", f)
	}
	if !slices.Equal(r.Steps[1].Files, []string{"pkg/b.go"}) || r.Steps[1].Added != 1 || !slices.Equal(r.Steps[3].Files, []string{"tmp/written.txt"}) {
		t.Fatalf("steps %+v", r.Steps)
	}
	if !slices.Equal(r.NotDone, []string{"s3"}) || len(r.DoneNoChange) != 0 {
		t.Fatalf("not done %q no change %q", r.NotDone, r.DoneNoChange)
	}
	want := []string{"go test ./pkg/...", "cat a.txt", "make lint"}
	var got []string
	for _, v := range r.Validation {
		got = append(got, v.Command)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("validation commands %q", got)
	}
	if v := r.Validation[0]; !v.Ran || v.Runs != 2 || *v.Exit != 0 {
		t.Fatalf("go test %+v", v)
	}
	if r.Validation[1].Ran || r.Validation[2].Ran {
		t.Fatalf("not run: %+v", r.Validation)
	}
	if r.Summary != "3/4 steps · 4 files · 2 outside the plan" {
		t.Fatalf("summary %q", r.Summary)
	}
	// A step marked done with nothing changed is flagged.
	in.Changes = in.Changes[:1]
	r = Build(in)
	if !slices.Equal(r.DoneNoChange, []string{"s2", "s4"}) || !strings.HasPrefix(r.Summary, "3/4 steps · 1 file ·") {
		t.Fatalf("%q %q", r.DoneNoChange, r.Summary)
	}
}

func TestScope(t *testing.T) {
	got := DeriveScope("# T\n## Summary\nsee README.md\n## Key Changes\n- edit `internal/foo/`\n- fix cmd/x/main.go\n## Validation\n- `go test ./...` and tools/check.sh\n")
	if !slices.Equal(got, []string{"internal/foo", "cmd/x/main.go"}) {
		t.Fatalf("derived %q", got)
	}
	s := Scope{Paths: got, Extensions: []string{"docs/a.md"}}
	for p, want := range map[string]bool{"internal/foo/a.go": true, "internal/foo": true, "internal/foobar/a.go": false, "cmd/x/main.go": true,
		"cmd/x/other.go": false, "docs/a.md": true, "README.md": false, "internal/foo/../../etc": false} {
		if s.Allows(p) != want {
			t.Errorf("Allows(%q) = %v", p, !want)
		}
	}
	if !(Scope{}).Allows("anything") {
		t.Error("an undeclared scope refuses")
	}
	if _, bad, ok := CleanScope([]string{"a/", " ", "../x"}); ok || bad != "../x" {
		t.Fatalf("CleanScope accepted %q", bad)
	}
	if c, _, ok := CleanScope([]string{"./a/", "a", "b/c.go"}); !ok || !slices.Equal(c, []string{"a", "b/c.go"}) {
		t.Fatalf("CleanScope %q", c)
	}
}
