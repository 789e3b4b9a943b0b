package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"planbridge/goal"
	"planbridge/internal/store"
)

// CodeSessionInUse refuses [Manager.Delete] of a session that still owns
// work.
const CodeSessionInUse = "session_in_use"

// Delete removes session id: its rows and its work:// files (the session
// directory under the state directory). The workspace and any worktree
// are never touched. It refuses, changing nothing, while a turn or a
// handoff runs, while prompts are queued, and while the session owns an
// unfinished implementation (a retry record, a tracked plan running or
// paused), an unfinished Goal, a Worktree fork it handed over to, or a
// share link still open.
func (m *Manager) Delete(ctx context.Context, id string) error {
	s, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return errorf(CodeBusy, "a turn is running in this session; wait for it or interrupt it, then delete")
	}
	if n := len(s.queue); n > 0 {
		s.mu.Unlock()
		return errorf(CodeSessionInUse, "%d prompt(s) are queued in this session; run them (M-x planbridge-recover) or interrupt, then delete", n)
	}
	// Held busy while deciding, so that no turn starts meanwhile.
	s.busy, s.deleted = true, true
	fork := s.row.ForkedTo
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.busy, s.deleted = false, false
		s.mu.Unlock()
		s.kick()
	}
	if err := m.deletable(ctx, s, fork); err != nil {
		release()
		return err
	}
	// The directory goes aside first (a name the start-up check does not
	// count), then the rows, then the files: a crash between leaves rows
	// without a directory or a stray directory, never a directory whose
	// rows are missing.
	dir := store.SessionDir(m.st.Dir(), id)
	trash := filepath.Join(filepath.Dir(dir), ".deleted-"+id)
	if err := os.Rename(dir, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
		release()
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := m.st.DeleteSession(ctx, id); err != nil {
		os.Rename(trash, dir) //nolint:errcheck // best effort: put it back
		release()
		return err
	}
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	return os.RemoveAll(trash)
}

// deletable says why s may not be deleted, or nil.
func (m *Manager) deletable(ctx context.Context, s *Session, fork string) error {
	id := s.id
	if fork != "" {
		if _, err := m.st.GetSession(ctx, fork); err == nil {
			return errorf(CodeSessionInUse, "this session handed its implementation to the Worktree fork %s; delete that first", fork)
		}
	}
	if _, err := m.st.GetRetryRecord(ctx, id); err == nil {
		return errorf(CodeSessionInUse, "this session has an accepted plan whose implementation is unfinished; finish it (M-x planbridge-recover) first")
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if p := s.TrackedPlan(); p != nil && (p.Status == ImplRunning || p.Status == ImplPaused) {
		return errorf(CodeSessionInUse, "this session's plan implementation is %s; finish it first", p.Status)
	}
	s.mu.Lock()
	g := s.gl.Goal
	s.mu.Unlock()
	if g != nil && g.Status != goal.Complete {
		return errorf(CodeSessionInUse, "this session's Goal is %s; clear it (/goal clear) first", g.Status)
	}
	if n, err := m.st.LiveShareRooms(ctx, id); err != nil {
		return err
	} else if n > 0 {
		return errorf(CodeSessionInUse, "this session is shared; stop sharing (M-x planbridge-share-stop) first")
	}
	return nil
}
