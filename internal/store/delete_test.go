package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDeleteSessionRowsAndFiles: the rows and the directory go together;
// a failed row commit puts the directory back and loses nothing; a stray
// directory a crash left aside is removed by the next delete; the start-up
// check never sees a directory whose rows are missing.
func TestDeleteSessionRowsAndFiles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fail     string // commit operations that fail
		noDir    bool   // the session has no directory (a crash after the move)
		stray    bool   // a directory a crash left aside is there
		wantGone bool
	}{
		{name: "rows and files", wantGone: true},
		{name: "the row commit fails", fail: OpDelete},
		{name: "after a crash that moved the directory aside", noDir: true, stray: true, wantGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(ctx, dir, WithFailingCommits(tc.fail))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.PutSession(ctx, Session{ID: "s-1", Workspace: "/w", Mode: "ask"}); err != nil {
				t.Fatal(err)
			}
			sd := SessionDir(dir, "s-1")
			trash := filepath.Join(dir, "sessions", ".deleted-s-1")
			if !tc.noDir {
				if err := os.MkdirAll(filepath.Join(sd, "work", "plans"), 0o700); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(sd, "work", "plans", "current.md"), []byte("# plan\n"), 0o600)
			}
			if tc.stray {
				os.MkdirAll(filepath.Join(trash, "work"), 0o700)
			}
			err = s.DeleteSession(ctx, "s-1")
			_, gerr := s.GetSession(ctx, "s-1")
			_, derr := os.Stat(sd)
			_, terr := os.Stat(trash)
			if tc.wantGone {
				if err != nil || !errors.Is(gerr, ErrNotFound) || !os.IsNotExist(derr) || !os.IsNotExist(terr) {
					t.Fatalf("DeleteSession = %v; row %v, dir %v, aside %v: want all gone", err, gerr, derr, terr)
				}
				return
			}
			if !errors.Is(err, syscall.ENOSPC) || gerr != nil || derr != nil || !os.IsNotExist(terr) {
				t.Fatalf("DeleteSession = %v; row %v, dir %v, aside %v: want the failure and everything kept", err, gerr, derr, terr)
			}
			if b, err := os.ReadFile(filepath.Join(sd, "work", "plans", "current.md")); err != nil || string(b) != "# plan\n" {
				t.Fatalf("the plan after a failed delete: %q, %v", b, err)
			}
			if ids, err := SessionDirs(dir); err != nil || len(ids) != 1 || ids[0] != "s-1" {
				t.Fatalf("SessionDirs = %v, %v", ids, err)
			}
		})
	}
}
