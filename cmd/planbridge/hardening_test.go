package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"planbridge/rpc"
)

// sharePrompt sends a prompt from a share link, as the page does.
func sharePrompt(t *testing.T, link, text string) (int, string) {
	t.Helper()
	base, key, _ := strings.Cut(link, "#k=")
	body, _ := json.Marshal(map[string]string{"text": text})
	req, _ := http.NewRequest("POST", base+"/prompt", bytes.NewReader(body))
	req.Header.Set("X-Planbridge-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const fsmonitorConfig = "[core]\n\tfsmonitor = touch pwned\n"

// TestControlFilesAskInEveryMode: writing .git/config is code execution
// (core.fsmonitor runs on the next `git status`), so it asks with a warning
// in edits and full-auto, and is refused outright from a share link, where
// nobody can answer.
func TestControlFilesAskInEveryMode(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	cfgPath := filepath.Join(ws, ".git", "config")
	original, _ := os.ReadFile(cfgPath)
	os.Symlink(".git", filepath.Join(ws, "docs-link"))
	writes := func(path string) string {
		return fmt.Sprintf(`{"tool_calls": [{"name": "write_file", "arguments": {"path": %q, "content": %q}}]}, {"text": "done\n"}`, path, fsmonitorConfig)
	}
	patch := `{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": "--- /dev/null\n+++ b/.GIT/hooks/pre-commit\n@@ -0,0 +1 @@\n+touch pwned\n"}}]}, {"text": "done\n"}`
	script := writeScript(t, "["+strings.Join([]string{
		writes(".git/config"),          // edits
		writes("docs-link/config"),     // full-auto, through a symlink
		patch,                          // full-auto, other letter case
		writes("src/../.git/config"),   // from a share link
		writes("a.txt"),                // edits, an ordinary file: no question
		writes(".git/info/attributes"), // full-auto, allowed by the person
	}, ",")+"]")
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script, "--share-listen", "127.0.0.1:0")
	s := createSession(t, ctx, p.c, ws)
	var mu sync.Mutex
	var asked []string
	allow := false
	p.c.OnAsk(func(params json.RawMessage) any {
		var a struct{ Tool, Summary string }
		json.Unmarshal(params, &a)
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, a.Summary)
		return map[string]bool{"allow": allow}
	})
	setMode := func(mode string) {
		if err := p.c.Call(ctx, "session/setPermissionMode", map[string]string{"session": s.ID, "mode": mode}, nil); err != nil {
			t.Fatal(err)
		}
	}
	turns := 0
	submit := func(text string) {
		turns++
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
		waitTurnEnd(t, ctx, p.c, turns)
	}
	lastAsk := func(n int) string {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != n {
			t.Fatalf("asked %d times, want %d: %q", len(asked), n, asked)
		}
		if n == 0 {
			return ""
		}
		return asked[n-1]
	}
	unchanged := func(when string) {
		if b, _ := os.ReadFile(cfgPath); !bytes.Equal(b, original) {
			t.Fatalf("%s: .git/config changed to %q", when, b)
		}
		if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
			t.Fatalf("%s: a pre-commit hook was written", when)
		}
	}

	setMode("edits")
	submit("configure git")
	if a := lastAsk(1); !strings.Contains(a, "WARNING") || !strings.Contains(a, ".git/config") {
		t.Errorf("edits: question %q", a)
	}
	unchanged("edits, denied")

	setMode("full-auto")
	submit("configure git through the link")
	if a := lastAsk(2); !strings.Contains(a, "WARNING") {
		t.Errorf("full-auto symlink: question %q", a)
	}
	submit("add a hook")
	if a := lastAsk(3); !strings.Contains(a, "WARNING") || !strings.Contains(a, ".GIT/hooks/pre-commit") {
		t.Errorf("full-auto patch: question %q", a)
	}
	unchanged("full-auto, denied")

	var shared struct{ Links []shareLink }
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "tiers": []string{"full"}}, &shared); err != nil {
		t.Fatal(err)
	}
	if code, body := sharePrompt(t, shared.Links[0].URL, "configure git from the browser"); code != 200 {
		t.Fatalf("share prompt: %d %s", code, body)
	}
	turns++
	waitTurnEnd(t, ctx, p.c, turns)
	lastAsk(3) // nobody was asked
	unchanged("share link")
	refused := false
	for _, e := range p.c.Events() {
		var d struct{ Code, Reason string }
		json.Unmarshal(e.Data, &d)
		if e.Kind == "blocked" && d.Code == "protected_path" && strings.Contains(d.Reason, "share link") {
			refused = true
		}
	}
	if !refused {
		t.Error("no protected_path refusal for the share-link turn")
	}

	setMode("edits")
	submit("edit a.txt")
	lastAsk(3)
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != fsmonitorConfig {
		t.Errorf("ordinary edit in edits mode did not run: %q", b)
	}

	setMode("full-auto")
	mu.Lock()
	allow = true
	mu.Unlock()
	submit("set attributes")
	lastAsk(4)
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "info", "attributes")); string(b) != fsmonitorConfig {
		t.Errorf("the person's yes did not let the write run: %q", b)
	}
}

// TestStateFileModesUnderUmask000: the state directory is 0700 and the
// database with its WAL and shared-memory files 0600, fresh or pre-existing.
func TestStateFileModesUnderUmask000(t *testing.T) {
	ctx := ctxT(t)
	fresh := filepath.Join(t.TempDir(), "fresh")
	open := t.TempDir()
	os.Chmod(open, 0o777)
	os.WriteFile(filepath.Join(open, "state.db"), nil, 0o666)
	os.Chmod(filepath.Join(open, "state.db"), 0o666)
	for _, dir := range []string{fresh, open} {
		old := syscall.Umask(0)
		p := startServe(t, dir)
		syscall.Umask(old)
		createSession(t, ctx, p.c, t.TempDir())
		if err := p.c.Call(ctx, "session/list", nil, nil); err != nil {
			t.Fatal(err)
		}
		check := func(name string, want os.FileMode) {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			if st.Mode().Perm() != want {
				t.Errorf("%s/%s mode %o, want %o", dir, name, st.Mode().Perm(), want)
			}
		}
		check(".", 0o700)
		check("state.db", 0o600)
		check("state.db-wal", 0o600)
		check("state.db-shm", 0o600)
		p.stop()
	}
}

var _ = rpc.Event{}
