package session

import (
	"context"
	"errors"
	"fmt"

	"planbridge/handoff"
	"planbridge/internal/store"
)

// CodeSessionInUse refuses [Manager.Delete] of a session that still owns
// work ([handoff.CheckDelete]).
const CodeSessionInUse = handoff.CodeSessionInUse

// Delete removes session id: its rows (its parked plans and approval
// outcomes too) and its work:// files (the session directory under the
// state directory). The workspace and any worktree are never touched. It
// refuses, changing nothing, while a turn, a handoff or a parked plan's
// start runs, while prompts are queued, and while the session owns an
// unfinished implementation (a retry record, a tracked plan running or
// paused), an unfinished Goal, a Worktree fork it handed over to, or a
// share link still open, or is a fork whose source is still handing
// over to it. Once it is deleted, whatever was between its checks and
// its commit (an acceptance, a park, a posture change) is refused with
// [CodeNotFound] and writes nothing ([Session.whileLive]). A session
// deleted whose files could not all be removed is deleted all the same:
// the result says where they stay (the next start tries again).
func (m *Manager) Delete(ctx context.Context, id string) (DeleteResult, error) {
	s, err := m.Get(ctx, id)
	if err != nil {
		return DeleteResult{}, err
	}
	// Under rowMu from the checks to the rows' removal: a commit of the
	// session's rows (an acceptance's retry record, a hand-over) comes
	// before the checks, which see it, or after the delete, which refuses
	// it ([Session.whileLive]); never between.
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	st := s.hand.DeleteState(ctx)
	s.mu.Lock()
	st.Busy, st.Starting, st.Queued = s.busy, s.hand.StartingLocked(), len(s.queue)
	if err := handoff.CheckDelete(st); err != nil {
		s.mu.Unlock()
		return DeleteResult{}, refused(err)
	}
	s.busy, s.deleted = true, true // no turn starts, nothing queues, while the rows go
	s.mu.Unlock()
	err = m.st.DeleteSession(ctx, id) // rows and files, crash-safe
	res := DeleteResult{Deleted: true}
	var left *store.FilesLeftError
	if errors.As(err, &left) {
		res.Warning = fmt.Sprintf("session %s is deleted, but some of its files could not be removed (%v); they stay in %s, which planbridge never reads, and the next start tries again", id, left.Err, left.Dir)
		m.log.Warn("delete session: files left", "session", id, "dir", left.Dir, "err", left.Err)
	} else if err != nil {
		s.mu.Lock()
		s.busy, s.deleted = false, false
		s.mu.Unlock()
		s.kick()
		return DeleteResult{}, err
	}
	s.mu.Lock()
	s.gone = true
	s.card.CloseLocked() // a card still up closes with the session (its timeout stops)
	s.mu.Unlock()
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	return res, nil
}

// DeleteResult is what [Manager.Delete] did: Warning, when set, says
// what of a deleted session could not be removed.
type DeleteResult struct {
	Deleted bool   `json:"deleted"`
	Warning string `json:"warning,omitempty"`
}
