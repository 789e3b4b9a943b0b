package session

import (
	"context"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/turn"
	"planbridge/worktree"
)

// handoffEnv is the session side of the handoff's ports: the pipeline
// ([handoff.Env]), the fork step ([handoff.ForkPort]), the run checks
// ([handoff.RunPort]); the Goal step's is the [goalrun.Runner]. The ports
// of one acceptance, park, start or recovery embed it with what they hold.
type handoffEnv struct{ s *Session }

func (e *handoffEnv) Save(ctx context.Context, rec *handoff.Record) error {
	data := rec.Marshal()
	return e.s.commitChange(ctx, func() (change, error) {
		return change{commit: func(ctx context.Context) error { return e.s.m.st.PutRetryRecord(ctx, e.s.id, data) }}, nil
	})
}

func (e *handoffEnv) PlanBody(ctx context.Context, rec *handoff.Record) (string, error) {
	return e.s.readArtifact(rec.Artifact.Path, rec.Artifact.Hash)
}

// History is [handoff.RenderHistory] of the current context.
func (e *handoffEnv) History(ctx context.Context) (string, error) {
	return turn.History(e.s.tr.Messages()), nil
}

func (e *handoffEnv) Summarize(ctx context.Context, system, input string) (string, error) {
	return e.s.turns.Summarize(ctx, "Summarizing the planning conversation for the handoff...", system, input)
}

func (e *handoffEnv) Summarized(ctx context.Context, rec *handoff.Record) {
	e.s.emit(event.Summary{Chars: len(rec.Summary)})
}

// InstallSegment rotates to rec.Segment with material as its first message
// and commits rec in the same transaction; a session already on that
// segment only commits rec.
func (e *handoffEnv) InstallSegment(ctx context.Context, rec *handoff.Record, material string) error {
	s := e.s
	s.mu.Lock()
	if rec.Segment == 0 {
		rec.Segment = s.row.Segment + 1
	}
	already := s.row.Segment == rec.Segment
	s.mu.Unlock()
	if already {
		return s.commitChange(ctx, func() (change, error) {
			g := store.Segment{Session: s.row, Record: rec.Marshal()}
			return change{commit: func(ctx context.Context) error { return s.m.st.CommitSegment(ctx, g) }}, nil
		})
	}
	if err := s.tr.Rotate(ctx, rec.Segment, material, rec.Marshal()); err != nil {
		return err
	}
	s.emit(event.Notice{Message: handoff.NewContextNotice(rec.Selection.Context)})
	return nil
}

func (e *handoffEnv) Workspace(ctx context.Context) string { return e.s.workspace() }

// Head is the workspace's HEAD commit and branch ("" outside git).
func (e *handoffEnv) Head() (hash, branch string) {
	if branch, hash, err := worktree.HeadOf(e.s.workspace()); err == nil {
		return hash, branch
	}
	return "", ""
}

// workspace is the session's workspace directory.
func (s *Session) workspace() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row.Workspace
}

// Kickoff runs the implementation turn ([turn.Kickoff]: dispatched with
// its prompt, the record deleted when it settles).
func (e *handoffEnv) Kickoff(ctx context.Context, rec *handoff.Record, prompt, display string) error {
	return e.s.turns.Run(ctx, turn.Kickoff(rec, prompt, display))
}

// Continue resumes a dispatched implementation from the stored transcript:
// the tracked plan runs again and the model is told it was interrupted.
func (e *handoffEnv) Continue(ctx context.Context, rec *handoff.Record) error {
	s := e.s
	if err := s.track.SetStatus(ctx, ImplRunning, ""); err != nil {
		return err
	}
	return s.turns.Run(ctx, turn.Continuation(rec, s.TrackedPlan()))
}
