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
	s.mu.Lock()
	if err := handoff.CheckDelete(handoff.DeleteState{Busy: s.busy, Starting: s.starting, Queued: len(s.queue)}); err != nil {
		s.mu.Unlock()
		return DeleteResult{}, refused(err)
	}
	// Held busy while deciding, so that no turn starts meanwhile.
	s.busy, s.deleted = true, true
	fork, parent := s.row.ForkedTo, s.row.ParentID
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.busy, s.deleted = false, false
		s.mu.Unlock()
		s.kick()
	}
	if err := m.deletable(ctx, s, parent, fork); err != nil {
		release()
		return DeleteResult{}, err
	}
	// Under rowMu, as every writer of the row: a posture change in flight
	// either commits before the delete or finds the session gone.
	s.rowMu.Lock()
	err = m.st.DeleteSession(ctx, id) // rows and files, crash-safe
	res := DeleteResult{Deleted: true}
	var left *store.FilesLeftError
	if errors.As(err, &left) {
		res.Warning = fmt.Sprintf("session %s is deleted, but some of its files could not be removed (%v); they stay in %s, which planbridge never reads, and the next start tries again", id, left.Err, left.Dir)
		m.log.Warn("delete session: files left", "session", id, "dir", left.Dir, "err", left.Err)
	} else if err != nil {
		s.rowMu.Unlock()
		release()
		return DeleteResult{}, err
	}
	s.mu.Lock()
	s.gone = true
	s.timeout.Stop() // a card still up closes with the session
	s.mu.Unlock()
	s.rowMu.Unlock()
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

// deletable is [handoff.CheckDelete] of s, its refusal as the session's
// [Error]; parent is the session s was forked from, fork the fork s
// handed over to.
func (m *Manager) deletable(ctx context.Context, s *Session, parent, fork string) error {
	st := handoff.DeleteState{Goal: s.Goal()}
	if parent != "" {
		// Before s's own record: the hand-over moves the record from the
		// parent to s in one commit, so one of the two reads sees it.
		data, err := m.st.GetRetryRecord(ctx, parent)
		if rec, perr := handoff.UnmarshalRecord(data); err == nil && perr == nil && rec.Fork.Session == s.id {
			st.Source = parent
		} else if !errors.Is(err, store.ErrNotFound) {
			st.SourceErr = err
		}
	}
	if fork != "" {
		if _, err := m.st.GetSession(ctx, fork); err == nil {
			st.Fork = fork
		}
	}
	if _, err := m.st.GetRetryRecord(ctx, s.id); !errors.Is(err, store.ErrNotFound) {
		st.Record, st.RecordErr = err == nil, err
	}
	if p := s.TrackedPlan(); p != nil && (p.Status == ImplRunning || p.Status == ImplPaused) {
		st.Implementation = fmt.Sprint(p.Status)
	}
	st.Shared, st.SharedErr = m.st.LiveShareRooms(ctx, s.id)
	return refused(handoff.CheckDelete(st))
}
