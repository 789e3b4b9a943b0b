package handoffport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/turn"
	"planbridge/review"
	"planbridge/worktree"
)

// env is the session side of the handoff's ports: the pipeline
// ([handoff.Env]), the fork step ([handoff.ForkPort]), the run checks
// ([handoff.RunPort]); the Goal step's is the Goal runner. The ports of
// one acceptance, park, start or recovery embed it with what they hold.
type env struct{ p *Ports }

// Env is the pipeline's port of this session ([handoff.Run] runs over it).
func (p *Ports) Env() handoff.Env { return env{p} }

func (e env) Save(ctx context.Context, rec *handoff.Record) error {
	p, data := e.p, rec.Marshal()
	return p.cfg.Host.Commit(ctx, func() (Change, error) {
		return Change{Commit: func(ctx context.Context) error { return p.cfg.Store.PutRetryRecord(ctx, p.cfg.Session, data) }}, nil
	})
}

func (e env) PlanBody(ctx context.Context, rec *handoff.Record) (string, error) {
	return handoff.ReadArtifact(e.p.cfg.WorkDir, rec.Artifact.Path, rec.Artifact.Hash)
}

// History is [handoff.RenderHistory] of the current context.
func (e env) History(ctx context.Context) (string, error) {
	return turn.History(e.p.cfg.Tr.Messages()), nil
}

func (e env) Summarize(ctx context.Context, system, input string) (string, error) {
	return e.p.cfg.Turns.Summarize(ctx, "Summarizing the planning conversation for the handoff...", system, input)
}

func (e env) Summarized(ctx context.Context, rec *handoff.Record) {
	e.p.cfg.Host.Emit(event.Summary{Chars: len(rec.Summary)})
}

// InstallSegment rotates to rec.Segment with material as its first message
// and commits rec in the same transaction; a session already on that
// segment only commits rec.
func (e env) InstallSegment(ctx context.Context, rec *handoff.Record, material string) error {
	p := e.p
	p.cfg.Lock.Lock()
	seg := p.cfg.Host.RowLocked().Segment
	if rec.Segment == 0 {
		rec.Segment = seg + 1
	}
	already := seg == rec.Segment
	p.cfg.Lock.Unlock()
	if already {
		return p.cfg.Host.Commit(ctx, func() (Change, error) {
			g := store.Segment{Session: p.cfg.Host.RowLocked(), Record: rec.Marshal()}
			return Change{Commit: func(ctx context.Context) error { return p.cfg.Store.CommitSegment(ctx, g) }}, nil
		})
	}
	if err := p.cfg.Tr.Rotate(ctx, rec.Segment, material, rec.Marshal()); err != nil {
		return err
	}
	p.cfg.Host.Emit(event.Notice{Message: handoff.NewContextNotice(rec.Selection.Context)})
	return nil
}

func (e env) Workspace(ctx context.Context) string { return e.p.workspace() }

// Head is the workspace's HEAD commit and branch ("" outside git).
func (e env) Head() (hash, branch string) {
	if branch, hash, err := worktree.HeadOf(e.p.workspace()); err == nil {
		return hash, branch
	}
	return "", ""
}

// Kickoff runs the implementation turn ([turn.Kickoff]: dispatched with
// its prompt, the record deleted when it settles).
func (e env) Kickoff(ctx context.Context, rec *handoff.Record, prompt, display string) error {
	return e.p.cfg.Turns.Run(ctx, turn.Kickoff(rec, prompt, display))
}

// Continue resumes a dispatched implementation from the stored transcript:
// the tracked plan runs again and the model is told it was interrupted.
func (e env) Continue(ctx context.Context, rec *handoff.Record) error {
	p := e.p
	if err := p.cfg.Track.SetStatus(ctx, review.ImplRunning, ""); err != nil {
		return err
	}
	return p.cfg.Turns.Run(ctx, turn.Continuation(rec, p.cfg.Track.Plan()))
}

// StartGoal is the Goal step of the handoff (the Goal runner's).
func (e env) StartGoal(ctx context.Context, rec *handoff.Record) error {
	return e.p.cfg.Goal.Start(ctx, e, rec)
}

func (e env) Failpoint(name string) { e.p.cfg.Host.Failpoint(name) }

// Start runs the handoff of rec as the session's owning workflow.
func (e env) Start(rec *handoff.Record) error { return e.p.startHandoff(rec) }

func (e env) ForkBlockers() []string {
	e.p.cfg.Lock.Lock()
	defer e.p.cfg.Lock.Unlock()
	return handoff.ForkBlockers(e.p.cfg.Host.ForkStateLocked())
}

func (e env) RepoRoot() (string, error) { return worktree.RootOf(e.p.workspace()) }

func (e env) UnfinishedGoal() (bool, string) { return e.p.cfg.Goal.Unfinished() }

func (e env) CheckModel(name string) error { return e.p.cfg.Host.CheckModel(name) }

// Fork is the Worktree step of the handoff: [handoff.ForkStep] over this
// session (the [handoff.ForkPort] below) and the repository.
func (e env) Fork(ctx context.Context, rec *handoff.Record) error {
	return handoff.ForkStep(ctx, e, e.p.cfg.Git, rec)
}

// ForkPoint is the transcript index after the proposing reply.
func (e env) ForkPoint() int64 { return e.p.cfg.Tr.Next() }

// StartFork opens the fork and recovers it, which starts its handoff.
func (e env) StartFork(ctx context.Context, rec *handoff.Record) error {
	fork, err := e.p.cfg.Host.Open(ctx, rec.Fork.Session)
	if err != nil {
		return fmt.Errorf("open the fork: %w", err)
	}
	e.p.cfg.Host.Emit(event.Forked{Fork: fork.ID(), Branch: rec.Fork.Branch, Dir: rec.Fork.Dir})
	_, err = fork.Recover(ctx)
	return err
}

// CreateForkSession creates the fork session (planning conversation up to
// the fork point, the accepted proposal) and records its id, in one
// transaction; rec names it only once that committed.
func (e env) CreateForkSession(ctx context.Context, rec *handoff.Record) error {
	p := e.p
	forkID := p.cfg.NewID("s-")
	h := p.cfg.Host
	err := h.Commit(ctx, func() (Change, error) {
		src := h.RowLocked()
		fs := store.ForkSession{SourceID: p.cfg.Session, Fork: store.Session{ID: forkID, Workspace: rec.Fork.Dir, Title: src.Title, Mode: src.Mode,
			Segment: src.Segment, ParentID: p.cfg.Session, ForkPoint: rec.Fork.Point}}
		named := *rec
		named.Fork.Session = forkID
		fs.SourceRecord = named.Marshal()
		if prop, ok := p.cfg.Card.ProposalLocked(); ok {
			prop.SessionID = forkID
			fs.Proposal = &prop
		}
		return Change{Commit: func(ctx context.Context) error {
			h.Born(forkID) // its implementation starts in this process: no restart
			return p.cfg.Store.CommitForkSession(ctx, fs)
		}, Done: func() { rec.Fork.Session = forkID }}, nil // only once it exists: a failed handoff saves rec
	})
	if err != nil {
		return err
	}
	// After the row: a directory never exists without its session.
	return os.MkdirAll(store.SessionDir(p.cfg.Store.Dir(), forkID), 0o700)
}

// RestoreEdits is [handoff.RestoreEdits] of the files this session edited.
func (e env) RestoreEdits(ctx context.Context, root, dir string) error {
	paths, err := e.p.cfg.Store.EditedFiles(ctx, e.p.cfg.Session)
	if err != nil {
		return err
	}
	return handoff.RestoreEdits(e.p.workspace(), root, dir, paths)
}

// HandOver gives the fork a byte-identical artifact and a Here-equivalent
// record, and in the same transaction removes this session's record and
// links it to the fork.
func (e env) HandOver(ctx context.Context, rec *handoff.Record) error {
	p := e.p
	// The fork's directory, should a crash between its row's commit and
	// its directory (CreateForkSession) have left it unmade: the record
	// names the fork only once its row committed, and only while the row
	// exists is it made (a directory never exists without its session).
	if _, err := p.cfg.Store.GetSession(ctx, rec.Fork.Session); err != nil {
		return fmt.Errorf("the fork session %s: %w", rec.Fork.Session, err)
	}
	if err := os.Mkdir(store.SessionDir(p.cfg.Store.Dir(), rec.Fork.Session), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := handoff.InstallPlan(p.cfg.WorkDir, p.workDirOf(rec.Fork.Session), rec.Artifact.Path); err != nil {
		return err
	}
	// The fork's base is its checkout now: the base commit plus the
	// restored edits, before anything of the implementation runs there.
	forkTrack, err := p.cfg.Track.ForFork(ctx, rec.Fork.Session, rec.Fork.Dir, rec.Artifact.Path, rec.Artifact.Hash)
	if err != nil {
		return err
	}
	fork, h := rec.Fork.Session, p.cfg.Host
	err = h.Commit(ctx, func() (Change, error) {
		row := h.RowLocked()
		row.ForkedTo = fork
		// The source keeps its todos; the plan is the fork's.
		ho := store.HandOver{Source: row, SourceTracking: store.Tracking{Todos: forkTrack.Row.Todos},
			ForkID: fork, ForkRecord: handoff.ForkRecord(rec).Marshal(), ForkTracking: forkTrack.Row}
		return Change{Commit: func(ctx context.Context) error {
			h.Born(fork) // its tracking is handed over running, not paused by restart
			return p.cfg.Store.CommitHandOver(ctx, ho)
		}, Done: func() { // only once the fork holds it: a failed hand-over keeps the plan here
			h.SetRowLocked(func(r *store.Session) { r.ForkedTo = fork })
			p.cfg.Track.Forget()
		}}, nil
	})
	if err != nil {
		return err
	}
	p.cfg.Track.ForkCommitted(rec.Fork.Session, forkTrack)
	return nil
}
