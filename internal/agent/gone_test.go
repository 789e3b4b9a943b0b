package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkWritesAfterTheSessionIsGone: the agent's writes to work:// (a
// file of the session's directory) after that directory was removed, or
// renamed away as a delete sets it aside, fail and bring nothing back —
// write_file, apply_patch, even into new folders; the same writes into
// the workspace still create the folders they need. Before, write_file
// created every missing directory and apply_patch made every missing
// parent up to the root, the session's directory among them.
func TestWorkWritesAfterTheSessionIsGone(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"removed", "renamed"} {
		for _, tool := range []string{"write_file", "apply_patch"} {
			t.Run(tool+"/"+how, func(t *testing.T) {
				state := t.TempDir()
				session := filepath.Join(state, "sessions", "s-1")
				ws := t.TempDir()
				env := &Env{Roots: Roots{Workspace: ws, Work: filepath.Join(session, "work")}}
				if err := os.MkdirAll(env.Roots.Work, 0o700); err != nil {
					t.Fatal(err)
				}
				run := func(path string) error {
					var args []byte
					if tool == "write_file" {
						args, _ = json.Marshal(map[string]string{"path": path, "content": "hi\n"})
						_, err := writeFileTool.Run(ctx, env, args)
						return err
					}
					args, _ = json.Marshal(map[string]string{"patch": "--- /dev/null\n+++ b/" + path + "\n@@ -0,0 +1 @@\n+hi\n"})
					_, err := applyPatchTool.Run(ctx, env, args)
					return err
				}
				// With the directory there, work:// and the workspace get new folders.
				if err := run("work://notes/a/b.md"); err != nil {
					t.Fatal(err)
				}
				if err := run("src/new/c.go"); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(ws, "src", "new", "c.go")); err != nil {
					t.Fatal(err)
				}
				if how == "removed" {
					os.RemoveAll(session)
				} else if err := os.Rename(session, filepath.Join(state, "sessions", ".deleted-s-1")); err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{"work://notes/x.md", "work://deep/er/y.md", "work://z.md"} {
					if err := run(p); err == nil {
						t.Errorf("%s written without the session's directory", p)
					}
					if _, err := os.Lstat(session); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("writing %s brought back the session's directory", p)
					}
				}
				if err := run("src/newer/d.go"); err != nil {
					t.Errorf("a workspace write after the session's directory went: %v", err)
				}
			})
		}
	}
}

// TestWorkWriteThroughALinkedStateDirectory: a state directory reached
// through a symbolic link, whose session has no work:// folder yet, still
// takes the agent's first work:// write (the folders below the session's
// directory are made).
func TestWorkWriteThroughALinkedStateDirectory(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(link, "sessions", "s-1")
	if err := os.MkdirAll(session, 0o700); err != nil {
		t.Fatal(err)
	}
	env := &Env{Roots: Roots{Workspace: t.TempDir(), Work: filepath.Join(session, "work")}}
	args, _ := json.Marshal(map[string]string{"path": "work://notes/x.md", "content": "hi\n"})
	if _, err := writeFileTool.Run(context.Background(), env, args); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(real, "sessions", "s-1", "work", "notes", "x.md")); string(b) != "hi\n" {
		t.Fatalf("content %q", b)
	}
}
