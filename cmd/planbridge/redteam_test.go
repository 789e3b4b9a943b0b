package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestControlFilesThroughGitDirIndirections: a checkout whose .git is a
// symlink to a store inside the workspace (the repo tool's layout), and a
// shared hook linked from .git/hooks: writing the store's config, writing
// .git/config through the symlink, and deleting the hook link all change
// what git runs, so each one asks in edits and full-auto; so does a file
// in the folder core.hooksPath names (husky's .husky/).
func TestControlFilesThroughGitDirIndirections(t *testing.T) {
	t.Run("root", func(t *testing.T) { testGitDirIndirections(t, false) })
	t.Run("nobody", func(t *testing.T) { testGitDirIndirections(t, true) })
}

func testGitDirIndirections(t *testing.T, unprivileged bool) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "a\n", "hook.sh": "#!/bin/sh\n"})
	if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "gitstore")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("gitstore", filepath.Join(ws, ".git"))
	hook := filepath.Join(ws, "gitstore", "hooks", "pre-commit")
	os.Symlink("../../hook.sh", hook)
	cfgPath := filepath.Join(ws, "gitstore", "config")
	gitIn(t, ws, "config", "core.hooksPath", ".husky")
	original, _ := os.ReadFile(cfgPath)
	writes := func(path string) string {
		return fmt.Sprintf(`{"tool_calls": [{"name": "write_file", "arguments": {"path": %q, "content": %q}}]}, {"text": "done\n"}`, path, fsmonitorConfig)
	}
	del := `{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": "--- a/.git/hooks/pre-commit\n+++ /dev/null\n@@ -1 +0,0 @@\n-#!/bin/sh\n"}}]}, {"text": "done\n"}`
	script := writeScript(t, "["+strings.Join([]string{
		writes(".git/config"),       // edits, through the .git symlink
		writes("gitstore/config"),   // full-auto, the store by its own name
		del,                         // full-auto, the hook link in .git
		writes(".husky/pre-commit"), // full-auto, core.hooksPath's folder
	}, ",")+"]")
	p := startServeAs(t, unprivileged, t.TempDir(), []string{ws, filepath.Dir(script)}, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	var mu sync.Mutex
	var asked []string
	p.c.OnAsk(func(params json.RawMessage) any {
		var a struct{ Summary string }
		json.Unmarshal(params, &a)
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, a.Summary)
		return map[string]bool{"allow": false}
	})
	turns := 0
	run := func(mode, text string) {
		if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": mode}, nil); err != nil {
			t.Fatal(err)
		}
		turns++
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
		waitTurnEnd(t, ctx, p.c, turns)
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != turns || !strings.Contains(asked[turns-1], "WARNING") {
			t.Fatalf("%s: %q: asked %q", mode, text, asked)
		}
	}
	run("edits", "configure git")
	run("full-auto", "configure the store")
	run("full-auto", "drop the hook")
	run("full-auto", "add a husky hook")
	if _, err := os.Stat(filepath.Join(ws, ".husky", "pre-commit")); err == nil {
		t.Fatal("a hook was written to core.hooksPath")
	}
	if b, _ := os.ReadFile(cfgPath); !bytes.Equal(b, original) {
		t.Fatalf("the git config changed to %q", b)
	}
	if st, err := os.Lstat(hook); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the hook link was removed: %v", err)
	}
}

// TestKeyFromTheWorkspaceNeverStored: the configured key reaches the
// session from the person (a prompt that pastes it) and from the
// workspace (a .env file the model reads); neither copy is stored or sent
// to a client unmasked.
func TestKeyFromTheWorkspaceNeverStored(t *testing.T) {
	ctx := ctxT(t)
	const key = "sk-proj-workspace-0123456789abcdefXYZ"
	ws := gitRepo(t, map[string]string{".env": "OPENAI_API_KEY=" + key + "\n"})
	script := writeScript(t, `[{"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]}, {"text": "read it\n"}, {"text": "ok\n"}]`)
	state := t.TempDir()
	p := startServeEnv(t, []string{"OPENAI_API_KEY=" + key}, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	for i, text := range []string{"my key is " + key + "; read .env", "again: " + key} {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
		waitTurnEnd(t, ctx, p.c, i+1)
	}
	// A Goal whose objective pastes the key: stored with the session.
	if err := p.c.Call(ctx, "goal/start", map[string]any{"session": s.ID, "objective": "deploy with " + key}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 3)
	p.c.Call(ctx, "goal/pause", map[string]any{"session": s.ID}, nil)
	var goal json.RawMessage
	if err := p.c.Call(ctx, "goal/get", map[string]any{"session": s.ID}, &goal); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(goal), key) {
		t.Errorf("goal/get carries the key: %s", goal)
	}
	var list json.RawMessage
	if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list), key) {
		t.Errorf("session/list carries the key: %s", list)
	}
	for _, e := range p.c.Events() {
		if strings.Contains(string(e.Data), key) {
			t.Errorf("event %s carries the key: %s", e.Kind, e.Data)
		}
	}
	grepTree(t, state, key)
	p.stop()
	grepTree(t, state, key)
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}
