package handoffport

import (
	"context"
	"errors"
	"fmt"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/review"
)

// DeleteState is what [handoff.CheckDelete] needs of the session beyond
// the facts of its lock (busy, the start's claim, the queue, which the
// delete reads in the critical section that claims the session): the
// hand-over to it from its source, its fork, its retry record, its
// implementation, its Goal, its open share links. The caller holds the
// session's row lock (so the row's fork link and the retry record stay
// as read), not [Config.Lock].
func (p *Ports) DeleteState(ctx context.Context) handoff.DeleteState {
	cfg := p.cfg
	st := handoff.DeleteState{Goal: cfg.Goal.Goal()}
	cfg.Lock.Lock()
	row := cfg.Host.RowLocked()
	cfg.Lock.Unlock()
	if row.ParentID != "" {
		// Before the session's own record: the hand-over moves the record
		// from the parent to it in one commit, so one of the two reads sees it.
		data, err := cfg.Store.GetRetryRecord(ctx, row.ParentID)
		if rec, perr := handoff.UnmarshalRecord(data); err == nil && perr == nil && rec.Fork.Session == cfg.Session {
			st.Source = row.ParentID
		} else if !errors.Is(err, store.ErrNotFound) {
			st.SourceErr = err
		}
	}
	if row.ForkedTo != "" {
		if _, err := cfg.Store.GetSession(ctx, row.ForkedTo); err == nil {
			st.Fork = row.ForkedTo
		}
	}
	if _, err := cfg.Store.GetRetryRecord(ctx, cfg.Session); !errors.Is(err, store.ErrNotFound) {
		st.Record, st.RecordErr = err == nil, err
	}
	if pl := cfg.Track.Plan(); pl != nil && (pl.Status == review.ImplRunning || pl.Status == review.ImplPaused) {
		st.Implementation = fmt.Sprint(pl.Status)
	}
	st.Shared, st.SharedErr = cfg.Store.LiveShareRooms(ctx, cfg.Session)
	return st
}
