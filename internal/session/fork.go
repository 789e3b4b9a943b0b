package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/worktree"
)

// More error codes.
const (
	CodeForkBlocked   = "fork_blocked"
	CodeInvalidBranch = "invalid_branch"
	CodeSessionEnded  = "session_ended"
)

// forkDir is where a Worktree fork of branch lives: .worktrees/<branch leaf>.
func forkDir(root, branch string) string {
	return filepath.Join(root, ".worktrees", path.Base(branch))
}

// repoRoot returns the root of the git checkout holding the workspace.
func (s *Session) repoRoot() (string, error) {
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	r, err := worktree.Open(ws)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.Root, nil
}

// notGitBlocker is the fork blocker of a workspace that is no git checkout.
const notGitBlocker = "the workspace is not a git checkout"

// forkBlockersLocked names what refuses a fork right now, in the words the
// card shows and the refusal uses.
func (s *Session) forkBlockersLocked() []string {
	var out []string
	if len(s.queue) > 0 {
		out = append(out, fmt.Sprintf("pending input (%d queued follow-up(s)): resolve it before forking", len(s.queue)))
	}
	if s.busy {
		out = append(out, "a request is running")
	}
	if s.goalUnfinishedLocked() {
		out = append(out, "an unfinished Goal is active in this session")
	}
	if s.wtNoGit {
		out = append(out, notGitBlocker)
	}
	return out
}

// checkFork validates a Worktree acceptance before anything moves.
func (s *Session) checkFork(branch string) error {
	if err := worktree.ValidBranchName(branch); err != nil {
		return &Error{Code: CodeInvalidBranch, Message: fmt.Sprintf("branch %q: %v", branch, err)}
	}
	s.mu.Lock()
	blockers := s.forkBlockersLocked()
	s.mu.Unlock()
	if len(blockers) > 0 {
		return &Error{Code: CodeForkBlocked, Message: "cannot fork: " + strings.Join(blockers, "; ")}
	}
	root, err := s.repoRoot()
	if err != nil {
		return &Error{Code: CodeForkBlocked, Message: "cannot fork: " + notGitBlocker + ": " + err.Error()}
	}
	dir := forkDir(root, branch)
	if _, err := os.Lstat(dir); err == nil {
		return &Error{Code: CodeForkBlocked, Message: fmt.Sprintf("cannot fork: %s already exists and no fork of this session lives there; to clean up: %s",
			dir, worktree.CleanupFor(root, dir, branch))}
	}
	return nil
}

// worktreeNotice is the card's "uncommitted changes stay behind" line, from
// the status walk (never a git helper); noGit reports that the workspace is
// no git checkout, which blocks a fork.
func (s *Session) worktreeNotice(ctx context.Context) (notice string, noGit bool) {
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	r, err := worktree.Open(ws)
	if err != nil {
		return "not a git checkout: Worktree is unavailable", true
	}
	defer r.Close()
	entries, err := r.Status(ctx)
	if err != nil {
		return "could not check for uncommitted changes: " + err.Error(), false
	}
	edited, _ := s.m.st.EditedFiles(ctx, s.id)
	restored := map[string]bool{}
	for _, p := range edited {
		restored[p] = true
	}
	behind := 0
	for _, e := range entries {
		if !restored[e.Path] {
			behind++
		}
	}
	if behind == 0 {
		return "the fork starts from HEAD; no uncommitted changes stay behind", false
	}
	return fmt.Sprintf("%d uncommitted change(s) stay behind (the fork starts from HEAD; files this session edited are restored)", behind), false
}

// Fork is the Worktree step of the handoff (see handoff.Env). Each stage is
// committed before the next: fork point; branch and directory reservation
// (before any git mutation); the fork session; the linked worktree; then one
// transaction gives the fork its own record and removes this one, so exactly
// one session owns the implementation at every moment.
func (e *handoffEnv) Fork(ctx context.Context, rec *handoff.Record) error {
	s := e.s
	if rec.Fork.Point == 0 {
		s.mu.Lock()
		rec.Fork.Point = s.nextIdx
		s.mu.Unlock()
		if err := e.Save(ctx, rec); err != nil {
			return err
		}
		handoff.Failpoint("fork.point")
	}
	root, err := s.repoRoot()
	if err != nil {
		return err
	}
	if rec.Fork.Dir == "" {
		rec.Fork.Branch = rec.Selection.Branch
		rec.Fork.Dir = forkDir(root, rec.Fork.Branch)
		if err := e.Save(ctx, rec); err != nil {
			return err
		}
		handoff.Failpoint("fork.reserved")
	}
	cleanup := worktree.CleanupFor(root, rec.Fork.Dir, rec.Fork.Branch)
	if rec.Fork.Session == "" {
		if _, err := os.Lstat(rec.Fork.Dir); err == nil {
			return fmt.Errorf("%s already exists and no fork of this session lives there; to clean up: %s", rec.Fork.Dir, cleanup)
		}
		if err := e.createForkSession(ctx, rec); err != nil {
			return err
		}
		handoff.Failpoint("fork.session")
	}
	if !isLinkedWorktree(rec.Fork.Dir) {
		if _, err := os.Lstat(rec.Fork.Dir); err == nil {
			return fmt.Errorf("%s exists but is not the fork's worktree; to clean up: %s", rec.Fork.Dir, cleanup)
		}
		if _, err := worktree.AddWorktree(ctx, root, rec.Fork.Dir, rec.Fork.Branch); err != nil {
			return fmt.Errorf("create the worktree: %w", err)
		}
		handoff.Failpoint("fork.worktree")
	}
	if err := e.restoreEdits(ctx, root, rec.Fork.Dir); err != nil {
		return err
	}
	if err := e.handOver(ctx, rec); err != nil {
		return err
	}
	handoff.Failpoint("fork.handed")
	fork, err := s.m.Get(ctx, rec.Fork.Session)
	if err != nil {
		return fmt.Errorf("open the fork: %w: %w", err, handoff.ErrHandedOver)
	}
	s.emit("forked", map[string]any{"fork": fork.id, "branch": rec.Fork.Branch, "dir": rec.Fork.Dir})
	rec.Step = handoff.StepForked
	if err := fork.Retry(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start the fork's handoff: %w: %w", err, handoff.ErrHandedOver)
	}
	return nil
}

// isLinkedWorktree reports whether dir holds a linked worktree checkout.
func isLinkedWorktree(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	return err == nil && strings.HasPrefix(string(b), "gitdir:")
}

// createForkSession creates the fork session (planning conversation up to
// the fork point, the accepted proposal) and records its id, in one
// transaction.
func (e *handoffEnv) createForkSession(ctx context.Context, rec *handoff.Record) error {
	s := e.s
	msgs, err := s.m.st.Messages(ctx, s.id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	src := s.row
	var prop store.Proposal
	if s.prop != nil {
		prop = *s.prop
	}
	s.mu.Unlock()
	forkID := newID("s-")
	fork := store.Session{ID: forkID, Workspace: rec.Fork.Dir, Title: src.Title, Mode: src.Mode,
		Segment: src.Segment, ParentID: s.id, ForkPoint: rec.Fork.Point}
	rec.Fork.Session = forkID
	return s.m.st.Tx(ctx, func(tx *sql.Tx) error {
		if err := store.PutSessionTx(ctx, tx, fork); err != nil {
			return err
		}
		var copyMsgs []store.Message
		for _, m := range msgs {
			if m.Idx < rec.Fork.Point {
				copyMsgs = append(copyMsgs, m)
			}
		}
		if err := store.AppendMessagesTx(ctx, tx, forkID, copyMsgs); err != nil {
			return err
		}
		if prop.SessionID != "" {
			prop.SessionID = forkID
			if err := store.PutProposalTx(ctx, tx, prop); err != nil {
				return err
			}
		}
		return store.PutRetryRecordTx(ctx, tx, s.id, rec.Marshal())
	})
}

// restoreEdits copies the files this session itself edited from the source
// checkout into the fork (other uncommitted changes stay behind).
func (e *handoffEnv) restoreEdits(ctx context.Context, root, dir string) error {
	paths, err := e.s.m.st.EditedFiles(ctx, e.s.id)
	if err != nil {
		return err
	}
	e.s.mu.Lock()
	ws := e.s.row.Workspace
	e.s.mu.Unlock()
	for _, rel := range paths {
		src := filepath.Join(ws, filepath.FromSlash(rel))
		abs, err := filepath.Rel(root, src)
		if err != nil || strings.HasPrefix(abs, "..") {
			continue
		}
		dst := filepath.Join(dir, abs)
		if err := copyFile(src, dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore %s into the fork: %w", rel, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return err
	}
	b, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(dst, b, st.Mode().Perm())
}

// handOver gives the fork a byte-identical artifact and a Here-equivalent
// record, and in the same transaction removes this session's record and
// links it to the fork.
func (e *handoffEnv) handOver(ctx context.Context, rec *handoff.Record) error {
	s := e.s
	forkWork := s.m.workDir(rec.Fork.Session)
	for _, rel := range []string{rec.Artifact.Path, CurrentPlanPath} {
		b, err := os.ReadFile(s.workPath(rel))
		if err != nil {
			if rel == CurrentPlanPath {
				continue
			}
			return err
		}
		perm := os.FileMode(0o444)
		if rel == CurrentPlanPath {
			perm = 0o644
		}
		if _, err := store.WriteFileOnce(filepath.Join(forkWork, filepath.FromSlash(rel)), b, perm); err != nil {
			return fmt.Errorf("install the accepted plan in the fork: %w", err)
		}
	}
	forkRec := *rec
	forkRec.Selection.Location = handoff.Here
	forkRec.Step, forkRec.Fork, forkRec.Reason, forkRec.Tries = handoff.StepRecorded, handoff.Fork{}, "", 0
	track := s.trackingRow()
	s.mu.Lock()
	row := s.row
	row.ForkedTo = rec.Fork.Session
	s.track.plan = nil
	s.mu.Unlock()
	err := s.m.st.Tx(ctx, func(tx *sql.Tx) error {
		if err := store.PutRetryRecordTx(ctx, tx, rec.Fork.Session, forkRec.Marshal()); err != nil {
			return err
		}
		if err := store.PutTrackingTx(ctx, tx, rec.Fork.Session, track); err != nil {
			return err
		}
		if err := store.PutTrackingTx(ctx, tx, s.id, store.Tracking{Todos: track.Todos}); err != nil {
			return err
		}
		if err := store.DeleteRetryRecordTx(ctx, tx, s.id); err != nil {
			return err
		}
		return store.PutSessionTx(ctx, tx, row)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.row.ForkedTo = rec.Fork.Session
	s.mu.Unlock()
	return nil
}

// recordEdit remembers a workspace file this session edited.
func (s *Session) recordEdit(call agent.ToolCall) {
	var paths []string
	switch call.Name {
	case "write_file", "edit_file":
		var a struct{ Path string }
		if json.Unmarshal(call.Arguments, &a) == nil {
			paths = append(paths, a.Path)
		}
	case "apply_patch":
		paths, _ = agent.PatchTargets(call.Arguments)
	}
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	for _, p := range paths {
		if p == "" || agent.IsWorkPath(p) {
			continue
		}
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(ws, p)
			if err != nil {
				continue
			}
			p = rel
		}
		if err := s.m.st.AddEditedFile(context.Background(), s.id, filepath.ToSlash(filepath.Clean(p))); err != nil {
			s.m.log.Warn("record edited file", "session", s.id, "err", err)
		}
	}
}
