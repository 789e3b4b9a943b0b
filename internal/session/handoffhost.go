package session

import (
	"context"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/handoffport"
	"planbridge/internal/store"
)

// More error codes.
const (
	CodeForkBlocked   = handoff.CodeForkBlocked
	CodeInvalidBranch = handoff.CodeInvalidBranch
	CodeSessionEnded  = handoff.CodeSessionEnded
)

// newPorts is the session side of the handoff step machines (package
// internal/handoffport) over the session's parts, guarded by s.mu; its
// host is handoffHost.
func (s *Session) newPorts() *handoffport.Ports {
	return handoffport.New(handoffport.Config{Session: s.id, WorkDir: s.workDir, Lock: &s.mu, Store: s.m.st, Host: handoffHost{s},
		Card: s.card, Track: s.track, Goal: s.goal, Turns: s.turns, Tr: s.tr, Git: handoff.WorktreeGit{Failpoint: handoff.Failpoint},
		NewID: newID})
}

// forkStateLocked is what of the session refuses a fork whatever the branch.
func (s *Session) forkStateLocked() handoff.ForkState {
	return handoff.ForkState{Queued: len(s.queue), Busy: s.busy, GoalUnfinished: s.goal.UnfinishedLocked(), NoGit: s.card.NoGitLocked()}
}

// refused is err, a [handoff.Refusal] turned into the session's [Error]
// with the same code and words.
func refused(err error) error {
	if r, ok := handoff.AsRefusal(err); ok {
		return &Error{Code: r.Code, Message: r.Message}
	}
	return err
}

// handoffHost is the session as its handoff ports' [handoffport.Host].
type handoffHost struct{ s *Session }

func (h handoffHost) Commit(ctx context.Context, prepare func() (handoffport.Change, error)) error {
	return h.s.commitChange(ctx, prepare)
}

func (h handoffHost) WhileLive(fn func() error) error           { return h.s.whileLive(fn) }
func (h handoffHost) RowLocked() store.Session                  { return h.s.row }
func (h handoffHost) SetRowLocked(set func(*store.Session))     { set(&h.s.row) }
func (h handoffHost) BusyLocked() bool                          { return h.s.busy }
func (h handoffHost) QueuedLocked() int                         { return len(h.s.queue) }
func (h handoffHost) ForkStateLocked() handoff.ForkState        { return h.s.forkStateLocked() }
func (h handoffHost) Emit(ev event.Data)                        { h.s.emit(ev) }
func (h handoffHost) Changed()                                  { h.s.changed() }
func (h handoffHost) Kick()                                     { h.s.kick() }
func (h handoffHost) Own(fn func(context.Context) func()) error { return h.s.own(fn) }
func (h handoffHost) Born(id string)                            { h.s.m.born(id) }
func (h handoffHost) CheckModel(name string) error              { return h.s.m.modelConfig().Check(name) }
func (h handoffHost) Failpoint(name string)                     { h.s.m.failpoint(name) }
func (h handoffHost) ResumeImplementation(ctx context.Context) error {
	return h.s.ResumeImplementation(ctx)
}

func (h handoffHost) ResumeGoal(ctx context.Context, steer string) error {
	_, err := h.s.GoalAction(ctx, goal.VerbResume, steer)
	return err
}

func (h handoffHost) Open(ctx context.Context, id string) (handoffport.Recoverer, error) {
	f, err := h.s.m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return f, nil
}
