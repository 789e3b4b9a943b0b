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
