package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFailedDeleteKeepsEarlierFilesSetAside: a session whose interrupted
// delete the start could not settle because it had a directory again
// keeps its earlier files aside (FinishDeletes tells the person to move
// back what they need). A later delete whose row commit fails changes
// nothing: those earlier files are still there, as the session is.
func TestFailedDeleteKeepsEarlierFilesSetAside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, WithFailingCommits(OpDelete))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSession(ctx, Session{ID: "s-1", Workspace: "/w", Mode: "ask"}); err != nil {
		t.Fatal(err)
	}
	sd := SessionDir(dir, "s-1")
	trash := filepath.Join(dir, "sessions", ".deleted-s-1")
	earlier := filepath.Join(trash, "work", "plans", "accepted-1.md")
	if err := os.MkdirAll(filepath.Dir(earlier), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(earlier, []byte("# earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sd, "work", "plans"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sd, "work", "plans", "current.md"), []byte("# plan\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s-1"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("DeleteSession = %v, want the row commit's failure", err)
	}
	if _, err := s.GetSession(ctx, "s-1"); err != nil {
		t.Fatalf("the session after a failed delete: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(sd, "work", "plans", "current.md")); err != nil || string(b) != "# plan\n" {
		t.Fatalf("the session's plan after a failed delete: %q, %v", b, err)
	}
	if b, err := os.ReadFile(earlier); err != nil || string(b) != "# earlier\n" {
		t.Fatalf("the earlier files set aside, after a delete that changed nothing: %q, %v", b, err)
	}
}
