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

// TestDeleteSessionWithParkedPlanAndOutcomes: a session whose cards
// ended (every card closing records its outcome) or that parked a plan
// is deleted like any other. Before, the delete left those rows, whose
// foreign key on the session refused the session row's deletion: such a
// session could never be deleted. Afterwards no table holds a row of it.
func TestDeleteSessionWithParkedPlanAndOutcomes(t *testing.T) {
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
	if err := s.CommitPark(ctx, Park{Plan: ParkedPlan{ID: "pp-1", SessionID: "s-1", Title: "T", Path: "plans/accepted-x.md", Hash: "x", Selection: "{}"},
		Outcome:  ApprovalOutcome{SessionID: "s-1", Attempt: "a-1", Outcome: "parked"},
		Proposal: Proposal{SessionID: "s-1", Status: "parked", Title: "T", Path: "plans/current.md", Hash: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApprovalOutcome(ctx, ApprovalOutcome{SessionID: "s-1", Attempt: "a-0", Outcome: "feedback"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s-1"); err != nil {
		t.Fatalf("DeleteSession of a session that parked a plan: %v", err)
	}
	rows, err := s.DB().QueryContext(ctx, `SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND c.name = 'session_id'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("found only the tables %v", tables)
	}
	for _, tb := range append(tables, "sessions") {
		col := "session_id"
		if tb == "sessions" {
			col = "id"
		}
		var n int
		if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM `+tb+` WHERE `+col+` = 's-1'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s holds %d row(s) of the deleted session (%v)", tb, n, err)
		}
	}
}
