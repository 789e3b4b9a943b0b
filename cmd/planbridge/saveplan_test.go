package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// TestSavePlanToProject: handoff/savePlan creates docs/plans with the
// ordinary directory mode (0755 under umask 022, not 0700), refuses what it
// cannot write with an application error (data.code, no absolute path),
// reuses an identical file and suffixes a second plan with the same title
// saved on the same day.
func TestSavePlanToProject(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	plan2 := strings.Replace(planText, "- cat greet.txt", "- grep hi greet.txt", 1)
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Done.\n"},
	 {"text": %q},
	 {"text": "Done again.\n"}]`, planText, plan2)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoffChange("mode", "full-auto"))
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	save := func() (string, error) {
		var res struct{ Path string }
		err := p.c.Call(ctx, "handoff/savePlan", map[string]string{"session": s.ID}, &res)
		return res.Path, err
	}

	// docs is a file: refused as an application error naming no absolute path.
	if err := os.WriteFile(filepath.Join(ws, "docs"), []byte("not a dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := save()
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code == jsonrpc2.CodeInternalError || je.Data == nil {
		t.Fatalf("savePlan into a file: %v (want an application error with data.code)", err)
	}
	var data struct{ Code string }
	json.Unmarshal(*je.Data, &data)
	if data.Code == "" || strings.Contains(je.Message, ws) || strings.Contains(string(*je.Data), ws) {
		t.Fatalf("refusal code %q message %q data %s", data.Code, je.Message, *je.Data)
	}
	os.Remove(filepath.Join(ws, "docs"))

	// docs is a symlink out of the workspace: refused, nothing written there.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "docs")); err != nil {
		t.Fatal(err)
	}
	if _, err := save(); !errors.As(err, &je) || je.Data == nil || strings.Contains(je.Message, outside) {
		t.Fatalf("savePlan through a symlink out of the workspace: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote outside the workspace: %v", ents)
	}
	os.Remove(filepath.Join(ws, "docs"))

	first, err := save()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "docs/plans/") || !strings.HasSuffix(first, "-rename-the-greeting.md") {
		t.Fatalf("path %q", first)
	}
	for _, d := range []string{"docs", "docs/plans"} {
		fi, err := os.Stat(filepath.Join(ws, d))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("%s: %v %v, want drwxr-xr-x", d, fi.Mode(), err)
		}
	}
	if again, err := save(); err != nil || again != first {
		t.Fatalf("saving the same plan again: %q %v, want %q", again, err, first)
	}

	// A second plan with the same title, accepted the same day.
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan check it with grep"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 3)
	v = getApproval(t, ctx, p.c, s.ID)
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 4)
	second, err := save()
	if err != nil {
		t.Fatalf("second plan with the same title: %v", err)
	}
	if want := strings.TrimSuffix(first, ".md") + "-2.md"; second != want {
		t.Fatalf("second path %q, want %q", second, want)
	}
	b1, _ := os.ReadFile(filepath.Join(ws, first))
	b2, _ := os.ReadFile(filepath.Join(ws, second))
	if !strings.Contains(string(b1), "- cat greet.txt") || !strings.Contains(string(b2), "- grep hi greet.txt") {
		t.Fatalf("contents:\n%s\n---\n%s", b1, b2)
	}
}
