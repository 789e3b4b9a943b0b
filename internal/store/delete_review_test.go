package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDeleteSessionAfterCrashThenReuse: a SIGKILL after DeleteSession moved
// the directory aside (rows kept) leaves a stray .deleted-<id>; the session
// is still there, is used again (its directory comes back, e.g. a new plan
// file), and the person deletes it again. That delete must succeed.
func TestDeleteSessionAfterCrashThenReuse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSession(ctx, Session{ID: "s-1", Workspace: "/w", Mode: "ask"}); err != nil {
		t.Fatal(err)
	}
	sd := SessionDir(dir, "s-1")
	trash := filepath.Join(dir, "sessions", ".deleted-s-1")
	// The crash: the directory went aside, the rows stayed.
	if err := os.MkdirAll(filepath.Join(trash, "work", "plans"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(trash, "work", "plans", "current.md"), []byte("# old\n"), 0o600)
	// After the restart the session is used again.
	if err := os.MkdirAll(filepath.Join(sd, "work", "plans"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sd, "work", "plans", "current.md"), []byte("# new\n"), 0o600)

	err = s.DeleteSession(ctx, "s-1")
	_, gerr := s.GetSession(ctx, "s-1")
	if err != nil || !errors.Is(gerr, ErrNotFound) {
		t.Fatalf("DeleteSession = %v; row %v: the session cannot be deleted after a crashed delete", err, gerr)
	}
	for _, p := range []string{sd, trash} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
}

// TestFinishDeletes: a delete killed between its steps is settled at the
// next start. Killed after the move (rows kept): the directory comes
// back with its files. Killed after the rows went: the moved directory
// is removed. A link or file named like a moved directory is left alone.
func TestFinishDeletes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"s-kept", "s-gone"} {
		if err := s.PutSession(ctx, Session{ID: id, Workspace: "/w", Mode: "ask"}); err != nil {
			t.Fatal(err)
		}
		plans := filepath.Join(SessionDir(dir, id), "work", "plans")
		if err := os.MkdirAll(plans, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plans, "accepted-1.md"), []byte("# "+id+"\n"), 0o600)
	}
	sessions := filepath.Join(dir, "sessions")
	// s-kept: killed after its move. s-gone: killed after its rows went.
	for _, id := range []string{"s-kept", "s-gone"} {
		if err := os.Rename(SessionDir(dir, id), filepath.Join(sessions, ".deleted-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.deleteRows(ctx, "s-gone"); err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600)
	os.Symlink(victim, filepath.Join(sessions, ".deleted-s-link"))

	if unfinished, err := s.FinishDeletes(ctx); err != nil || len(unfinished) > 0 {
		t.Fatal(unfinished, err)
	}
	if b, err := os.ReadFile(filepath.Join(SessionDir(dir, "s-kept"), "work", "plans", "accepted-1.md")); string(b) != "# s-kept\n" {
		t.Errorf("s-kept's plan after the start: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(sessions, ".deleted-s-kept"), filepath.Join(sessions, ".deleted-s-gone"), SessionDir(dir, "s-gone")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("a link named like a moved directory was followed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sessions, ".deleted-s-link")); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
}
