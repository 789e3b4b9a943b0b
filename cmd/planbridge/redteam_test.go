package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestControlFilesThroughGitDirIndirections: a checkout whose .git is a
// symlink to a store inside the workspace (the repo tool's layout), and a
// shared hook linked from .git/hooks: writing the store's config, writing
// .git/config through the symlink, and deleting the hook link all change
// what git runs, so each one asks in edits and full-auto.
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
	original, _ := os.ReadFile(cfgPath)
	writes := func(path string) string {
		return fmt.Sprintf(`{"tool_calls": [{"name": "write_file", "arguments": {"path": %q, "content": %q}}]}, {"text": "done\n"}`, path, fsmonitorConfig)
	}
	del := `{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": "--- a/.git/hooks/pre-commit\n+++ /dev/null\n@@ -1 +0,0 @@\n-#!/bin/sh\n"}}]}, {"text": "done\n"}`
	script := writeScript(t, "["+strings.Join([]string{
		writes(".git/config"),     // edits, through the .git symlink
		writes("gitstore/config"), // full-auto, the store by its own name
		del,                       // full-auto, the hook link in .git
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
	if b, _ := os.ReadFile(cfgPath); !bytes.Equal(b, original) {
		t.Fatalf("the git config changed to %q", b)
	}
	if st, err := os.Lstat(hook); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the hook link was removed: %v", err)
	}
}
