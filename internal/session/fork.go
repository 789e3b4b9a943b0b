package session

import (
	"context"
	"fmt"
	"os"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/worktree"
)

// More error codes.
const (
	CodeForkBlocked   = handoff.CodeForkBlocked
	CodeInvalidBranch = handoff.CodeInvalidBranch
	CodeSessionEnded  = handoff.CodeSessionEnded
)

// forkStateLocked is what of the session refuses a fork whatever the branch.
func (s *Session) forkStateLocked() handoff.ForkState {
	return handoff.ForkState{Queued: len(s.queue), Busy: s.busy, GoalUnfinished: s.goal.UnfinishedLocked(), NoGit: s.card.NoGitLocked()}
}

func (c handoffEnv) Failpoint(name string) { c.s.m.failpoint(name) }

// Start runs the handoff of rec as the session's owning workflow.
func (c handoffEnv) Start(rec *handoff.Record) error { return c.s.startHandoff(rec) }

func (c handoffEnv) ForkBlockers() []string {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return handoff.ForkBlockers(c.s.forkStateLocked())
}

func (c handoffEnv) RepoRoot() (string, error) { return worktree.RootOf(c.s.workspace()) }

func (c handoffEnv) UnfinishedGoal() (bool, string) {
	return c.s.goal.Unfinished()
}

func (c handoffEnv) CheckModel(name string) error { return c.s.m.modelConfig().Check(name) }

// refused is err, a [handoff.Refusal] turned into the session's [Error]
// with the same code and words.
func refused(err error) error {
	if r, ok := handoff.AsRefusal(err); ok {
		return &Error{Code: r.Code, Message: r.Message}
	}
	return err
}

// Fork is the Worktree step of the handoff: [handoff.ForkStep] over this
// session (the [handoff.ForkPort] below) and the real repository.
func (e *handoffEnv) Fork(ctx context.Context, rec *handoff.Record) error {
	return handoff.ForkStep(ctx, e, handoff.WorktreeGit{Failpoint: handoff.Failpoint}, rec)
}

// ForkPoint is the transcript index after the proposing reply.
func (e *handoffEnv) ForkPoint() int64 {
	return e.s.tr.Next()
}

// StartFork opens the fork and recovers it, which starts its handoff.
func (e *handoffEnv) StartFork(ctx context.Context, rec *handoff.Record) error {
	fork, err := e.s.m.Get(ctx, rec.Fork.Session)
	if err != nil {
		return fmt.Errorf("open the fork: %w", err)
	}
	e.s.emit(event.Forked{Fork: fork.id, Branch: rec.Fork.Branch, Dir: rec.Fork.Dir})
	_, err = fork.Recover(ctx)
	return err
}

// CreateForkSession creates the fork session (planning conversation up to
// the fork point, the accepted proposal) and records its id, in one
// transaction; rec names it only once that committed.
func (e *handoffEnv) CreateForkSession(ctx context.Context, rec *handoff.Record) error {
	s, forkID := e.s, newID("s-")
	err := s.commitChange(ctx, func() (change, error) {
		src := s.row
		fs := store.ForkSession{SourceID: s.id, Fork: store.Session{ID: forkID, Workspace: rec.Fork.Dir, Title: src.Title, Mode: src.Mode,
			Segment: src.Segment, ParentID: s.id, ForkPoint: rec.Fork.Point}}
		named := *rec
		named.Fork.Session = forkID
		fs.SourceRecord = named.Marshal()
		if prop, ok := s.card.ProposalLocked(); ok {
			prop.SessionID = forkID
			fs.Proposal = &prop
		}
		return change{commit: func(ctx context.Context) error {
			s.m.born(forkID) // its implementation starts in this process: no restart
			return s.m.st.CommitForkSession(ctx, fs)
		}, done: func() { rec.Fork.Session = forkID }}, nil // only once it exists: a failed handoff saves rec
	})
	if err != nil {
		return err
	}
	// After the row: a directory never exists without its session.
	return os.MkdirAll(store.SessionDir(s.m.st.Dir(), forkID), 0o700)
}

// RestoreEdits is [handoff.RestoreEdits] of the files this session edited.
func (e *handoffEnv) RestoreEdits(ctx context.Context, root, dir string) error {
	paths, err := e.s.m.st.EditedFiles(ctx, e.s.id)
	if err != nil {
		return err
	}
	return handoff.RestoreEdits(e.s.workspace(), root, dir, paths)
}

// HandOver gives the fork a byte-identical artifact and a Here-equivalent
// record, and in the same transaction removes this session's record and
// links it to the fork.
func (e *handoffEnv) HandOver(ctx context.Context, rec *handoff.Record) error {
	s := e.s
	if err := handoff.InstallPlan(s.workDir, s.m.workDir(rec.Fork.Session), rec.Artifact.Path); err != nil {
		return err
	}
	// The fork's base is its checkout now: the base commit plus the
	// restored edits, before anything of the implementation runs there.
	forkTrack, err := s.track.ForFork(ctx, rec.Fork.Session, rec.Fork.Dir, rec.Artifact.Path, rec.Artifact.Hash)
	if err != nil {
		return err
	}
	fork := rec.Fork.Session
	err = s.commitChange(ctx, func() (change, error) {
		row := s.row
		row.ForkedTo = fork
		// The source keeps its todos; the plan is the fork's.
		h := store.HandOver{Source: row, SourceTracking: store.Tracking{Todos: forkTrack.Row.Todos},
			ForkID: fork, ForkRecord: handoff.ForkRecord(rec).Marshal(), ForkTracking: forkTrack.Row}
		return change{commit: func(ctx context.Context) error {
			s.m.born(fork) // its tracking is handed over running, not paused by restart
			return s.m.st.CommitHandOver(ctx, h)
		}, done: func() { // only once the fork holds it: a failed hand-over keeps the plan here
			s.row.ForkedTo = fork
			s.track.Forget()
		}}, nil
	})
	if err != nil {
		return err
	}
	s.track.ForkCommitted(rec.Fork.Session, forkTrack)
	return nil
}
