package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanBashThroughRunner: read-only commands run in Plan through the
// hardened runner; mutating ones are refused statically; a glob that expands
// to a dangerous option is refused at execution.
func TestPlanBashThroughRunner(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.go": "package a\n// TODO one\n", "b.go": "package a\n"})
	if err := os.WriteFile(filepath.Join(ws, "-delete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ws)
	script := writeScript(t, `[
	 {"tool_calls": [
	   {"name": "bash", "arguments": {"command": "git status --short && git log --oneline | head -n 1"}},
	   {"name": "bash", "arguments": {"command": "grep -n TODO a.go | wc -l"}},
	   {"name": "bash", "arguments": {"command": "sort -o out.txt a.go"}},
	   {"name": "bash", "arguments": {"command": "find * -name '*.go'"}},
	   {"name": "bash", "arguments": {"command": "echo hi > x.txt"}}
	 ]},
	 {"text": "done\n"}]`)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan look"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	results := map[string]string{}
	blocked := map[string]string{}
	names := map[string]string{}
	for _, e := range p.c.Events() {
		var d map[string]any
		json.Unmarshal(e.Data, &d)
		id, _ := d["id"].(string)
		switch e.Kind {
		case "tool_call":
			args, _ := d["arguments"].(map[string]any)
			names[id], _ = args["command"].(string)
		case "tool_result":
			results[names[id]], _ = d["output"].(string)
		case "blocked":
			blocked[names[id]], _ = d["reason"].(string)
		}
	}
	if !strings.Contains(results["grep -n TODO a.go | wc -l"], "1") {
		t.Errorf("read-only pipeline output %q", results["grep -n TODO a.go | wc -l"])
	}
	if _, ok := results["git status --short && git log --oneline | head -n 1"]; !ok {
		t.Errorf("git status did not run: %v %v", results, blocked)
	}
	for _, cmd := range []string{"sort -o out.txt a.go", "echo hi > x.txt"} {
		if blocked[cmd] == "" {
			t.Errorf("%q was not refused", cmd)
		}
	}
	if r := blocked["find * -name '*.go'"]; !strings.Contains(r, "-delete") || !strings.Contains(r, "execution") {
		t.Errorf("find * with a -delete file: %q", r)
	}
	if after := snapshot(t, ws); len(after) != len(before) {
		t.Errorf("workspace changed: %d → %d files", len(before), len(after))
	}
}
