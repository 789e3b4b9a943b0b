package session

import (
	"context"

	"planbridge/handoff"
	"planbridge/internal/handoffport"
)

// commitChange is the one sequence of every commit that writes the
// session's rows (the row, an acceptance, a park, a hand-over, a fork's
// creation, a segment, the retry record): under rowMu from the snapshot
// to the in-memory change that follows (see rowMu), refused while the
// session is deleted ([Session.whileLive]); prepare runs under s.mu and
// returns the change ([handoffport.Change]), or a refusal that changes
// nothing. Memory moves only with a commit that succeeded: a failed one
// runs its Undo.
func (s *Session) commitChange(ctx context.Context, prepare func() (handoffport.Change, error)) error {
	return s.whileLive(func() error {
		s.mu.Lock()
		c, err := prepare()
		s.mu.Unlock()
		if err != nil {
			return err
		}
		err = c.Commit(ctx)
		f := c.Undo
		if err == nil {
			f = c.Done
		}
		if f != nil {
			s.mu.Lock()
			f()
			s.mu.Unlock()
		}
		return err
	})
}

// whileLive runs fn, which writes the session's rows or into its
// directory, unless the session is deleted: then it fails with
// [CodeNotFound] and fn never runs. It holds rowMu, as [Manager.Delete]
// does from its checks to the rows' and the directory's removal, so a
// write comes either before the delete (and goes with it) or after it
// (and is refused): never a row or a directory of a deleted session
// written back (every row commit is an upsert). The caller holds neither
// rowMu nor s.mu.
func (s *Session) whileLive(fn func() error) error {
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone {
		return errorf(CodeNotFound, "session %s was deleted", s.id)
	}
	return fn()
}

// RecoverResult says which step [Session.Recover] took.
type RecoverResult = handoff.Recovered

// Recover is the one recovery path after any interruption (a crash, a
// failed step, an interrupted turn): [handoff.Recover] over this session,
// which always takes the right next step ([handoff.NextRecovery]) and
// with nothing to recover fails with [CodeNothingToRetry].
func (s *Session) Recover(ctx context.Context) (RecoverResult, error) {
	res, err := s.hand.Recover(ctx)
	if r, ok := err.(*handoff.Refusal); ok { // Recover's own, never a step's
		err = &Error{Code: r.Code, Message: r.Message}
	}
	return res, err
}
