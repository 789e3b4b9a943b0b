package handoff

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHandOverWritesAfterTheirDirectoryIsGone: installing the accepted
// plan into a fork session whose directory was removed, or renamed away
// as a delete sets it aside, fails and brings the directory back neither
// at its path nor anywhere else; so does restoring the edits into a fork
// checkout that is gone. Before, both wrote through atomic writes that
// created every missing directory, the fork session's (or the fork's)
// own among them.
func TestHandOverWritesAfterTheirDirectoryIsGone(t *testing.T) {
	const art = "plans/accepted-0123456789abcdef.md"
	for _, how := range []string{"removed", "renamed"} {
		gone := func(t *testing.T, dir string) {
			t.Helper()
			if how == "removed" {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Rename(dir, filepath.Join(filepath.Dir(dir), ".deleted-"+filepath.Base(dir))); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("install the plan/"+how, func(t *testing.T) {
			state := t.TempDir()
			src := filepath.Join(state, "sessions", "s-1", "work")
			os.MkdirAll(filepath.Join(src, "plans"), 0o700)
			os.WriteFile(filepath.Join(src, art), []byte("# P\n"), 0o444)
			os.WriteFile(filepath.Join(src, CurrentPlan), []byte("# P\n"), 0o644)
			fork := filepath.Join(state, "sessions", "s-2")
			os.MkdirAll(fork, 0o700)
			gone(t, fork)
			if err := InstallPlan(src, filepath.Join(fork, "work"), art); err == nil {
				t.Fatal("the plan was installed into a fork session that is gone")
			}
			if _, err := os.Lstat(fork); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the install brought back the fork session's directory")
			}
		})
		t.Run("restore the edits/"+how, func(t *testing.T) {
			root := gitRepo(t, map[string]string{"a.txt": "a\n"})
			os.MkdirAll(filepath.Join(root, "new", "dir"), 0o755)
			os.WriteFile(filepath.Join(root, "new", "dir", "f.txt"), []byte("made\n"), 0o644)
			fork := filepath.Join(t.TempDir(), "fork")
			os.MkdirAll(fork, 0o755)
			gone(t, fork)
			if err := RestoreEdits(root, root, fork, []string{"new/dir/f.txt"}); err == nil {
				t.Fatal("the edits were restored into a fork that is gone")
			}
			if _, err := os.Lstat(fork); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the restore brought back the fork's directory")
			}
		})
	}
	// With the fork there, its missing folders are made.
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	os.MkdirAll(filepath.Join(root, "new", "dir"), 0o755)
	os.WriteFile(filepath.Join(root, "new", "dir", "f.txt"), []byte("made\n"), 0o644)
	fork := t.TempDir()
	if err := RestoreEdits(root, root, fork, []string{"new/dir/f.txt"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(fork, "new", "dir", "f.txt")); string(b) != "made\n" {
		t.Fatalf("restored %q", b)
	}
}
