package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"syscall"
)

// Commit operations: the names of the durability boundaries. A failpoint
// ([WithFailingCommits]) names them to make one fail as a full disk would.
const (
	OpEvents     = "events"     // event log rows
	OpPrompt     = "prompt"     // a turn's prompt, before it is sent
	OpTurn       = "turn"       // a turn's step (assistant message, tool result) and its settlement
	OpSession    = "session"    // the session row alone
	OpAcceptance = "acceptance" // proposal accepted, Plan left, retry record written
	OpRecord     = "record"     // a handoff step's retry record
	OpSegment    = "segment"    // a Fresh/Summary context segment with its record
	OpDispatch   = "dispatch"   // the kickoff prompt with the record moved to dispatched
	OpForkSess   = "fork.session"
	OpHandOver   = "handover" // the fork takes the record, the source lets go
	OpGoal       = "goal"     // a Goal row (and, at a plan handoff, the record cleared)
	OpTracking   = "tracking"
	OpProposal   = "proposal"
	OpDelete     = "delete" // a session's rows, all at once
	OpOther      = "other"
)

// FailCommitsEnv names the environment variable the server reads into
// [WithFailingCommits]: a comma-separated list of commit operations, or "*".
const FailCommitsEnv = "PLANBRIDGE_STORE_FAIL"

// Option configures [Open].
type Option func(*Store)

// WithFailingCommits makes every commit of the named operations fail with
// ENOSPC before anything is written ("*" names all). For tests.
func WithFailingCommits(ops string) Option {
	set := map[string]bool{}
	for _, op := range strings.Split(ops, ",") {
		if op = strings.TrimSpace(op); op != "" {
			set[op] = true
		}
	}
	return func(s *Store) {
		if len(set) == 0 {
			return
		}
		s.fail = func(op string) error {
			if set[op] || set["*"] {
				return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
			}
			return nil
		}
	}
}

// WithCommitFailure makes every commit whose operation fail returns an
// error for fail with that error, before anything is written (fail is
// called for every commit and may change its answer as a test goes on).
// For tests.
func WithCommitFailure(fail func(op string) error) Option {
	return func(s *Store) { s.fail = fail }
}

// commit runs fn in an immediate write transaction named op, committing if
// fn returns nil. The name is what a failpoint matches. The transaction
// never leaves this package: callers use the named operations.
func (s *Store) commit(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if s.fail != nil {
		if err := s.fail(op); err != nil {
			return err
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin %s: %w", op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit %s: %w", op, err)
	}
	return nil
}
