package store

import (
	"context"
	"database/sql"
)

// The named durability boundaries. Each commits everything it is given in
// one transaction, or nothing; the caller's in-memory state moves only
// after it returns nil.

// TurnStep is one commit of a turn: messages appended to the transcript
// with the session row, and what rides along with them.
type TurnStep struct {
	Session  Session   // written as it is
	Messages []Message // appended (indices assigned by the caller)
	// Record, when non-empty, replaces the session's retry record (a
	// kickoff moving it to dispatched); DeleteRecord removes it (a settled
	// implementation turn).
	Record       string
	DeleteRecord bool
	// Goal, when set, marks that stored Goal's kickoff dispatched (its
	// pending kickoff cleared) with the step. Only the mark is written,
	// never the Goal's data or its cleared flag: a Goal action or a clear
	// committed since the caller's snapshot is never written back.
	Goal    *GoalRow
	Dequeue int64 // a queued input leaving the queue as this prompt
}

// CommitTurnStep commits one turn step under operation op (OpPrompt,
// OpDispatch or OpTurn).
func (s *Store) CommitTurnStep(ctx context.Context, op string, st TurnStep) error {
	return s.commit(ctx, op, func(tx *sql.Tx) error {
		if err := appendMessagesTx(ctx, tx, st.Session.ID, st.Messages); err != nil {
			return err
		}
		if st.Record != "" {
			if err := putRetryRecordTx(ctx, tx, st.Session.ID, st.Record); err != nil {
				return err
			}
		}
		if st.DeleteRecord {
			if err := deleteRetryRecordTx(ctx, tx, st.Session.ID); err != nil {
				return err
			}
		}
		if st.Goal != nil {
			if err := goalDispatchedTx(ctx, tx, *st.Goal); err != nil {
				return err
			}
		}
		if st.Dequeue != 0 {
			if err := dequeueInputTx(ctx, tx, st.Dequeue); err != nil {
				return err
			}
		}
		return putSessionTx(ctx, tx, st.Session)
	})
}

// Acceptance is the commit that makes an acceptance final: the proposal
// accepted, Plan left (the session row), the accepted plan's tracking and
// the retry record.
type Acceptance struct {
	Session  Session
	Proposal Proposal
	Tracking Tracking
	Record   string
	// Parked, when set, is the parked plan this acceptance starts: it is
	// marked started in the same commit, which fails with
	// [ErrAlreadyStarted] if it was, so a parked plan starts at most once.
	Parked         string
	ParkedLocation string
}

// CommitAcceptance commits an acceptance (OpAcceptance).
func (s *Store) CommitAcceptance(ctx context.Context, a Acceptance) error {
	return s.commit(ctx, OpAcceptance, func(tx *sql.Tx) error {
		if a.Parked != "" {
			if err := markParkedStartedTx(ctx, tx, a.Parked, a.ParkedLocation); err != nil {
				return err
			}
		}
		if err := putProposalTx(ctx, tx, a.Proposal); err != nil {
			return err
		}
		if err := putSessionTx(ctx, tx, a.Session); err != nil {
			return err
		}
		if err := putTrackingTx(ctx, tx, a.Session.ID, a.Tracking); err != nil {
			return err
		}
		return putRetryRecordTx(ctx, tx, a.Session.ID, a.Record)
	})
}

// ForkSession creates a Worktree fork's session: its row, the planning
// transcript up to the fork point (the source's messages before
// Fork.ForkPoint, copied in the transaction), its copy of the proposal,
// and the source's retry record naming it.
type ForkSession struct {
	Fork         Session
	Proposal     *Proposal // nil: none
	SourceID     string
	SourceRecord string
}

// CommitForkSession commits a fork session (OpForkSess).
func (s *Store) CommitForkSession(ctx context.Context, f ForkSession) error {
	return s.commit(ctx, OpForkSess, func(tx *sql.Tx) error {
		if err := putSessionTx(ctx, tx, f.Fork); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, idx, segment, role, content, tool_calls, tool_call_id, name, thinking)
			SELECT ?, idx, segment, role, content, tool_calls, tool_call_id, name, thinking FROM messages WHERE session_id = ? AND idx < ? ORDER BY idx`,
			f.Fork.ID, f.SourceID, f.Fork.ForkPoint); err != nil {
			return err
		}
		if f.Proposal != nil {
			if err := putProposalTx(ctx, tx, *f.Proposal); err != nil {
				return err
			}
		}
		return putRetryRecordTx(ctx, tx, f.SourceID, f.SourceRecord)
	})
}

// HandOver moves an implementation to a fork: the fork gets its record and
// tracking, the source loses its record and plan tracking and is linked to
// the fork (its row), so exactly one session owns the implementation.
type HandOver struct {
	Source         Session
	SourceTracking Tracking
	ForkID         string
	ForkRecord     string
	ForkTracking   Tracking
}

// CommitHandOver commits a hand-over (OpHandOver).
func (s *Store) CommitHandOver(ctx context.Context, h HandOver) error {
	return s.commit(ctx, OpHandOver, func(tx *sql.Tx) error {
		if err := putRetryRecordTx(ctx, tx, h.ForkID, h.ForkRecord); err != nil {
			return err
		}
		if err := putTrackingTx(ctx, tx, h.ForkID, h.ForkTracking); err != nil {
			return err
		}
		if err := putTrackingTx(ctx, tx, h.Source.ID, h.SourceTracking); err != nil {
			return err
		}
		if err := deleteRetryRecordTx(ctx, tx, h.Source.ID); err != nil {
			return err
		}
		return putSessionTx(ctx, tx, h.Source)
	})
}

// Segment starts a new context segment: its first message with the
// session row (Message nil: the segment is installed already), and the
// retry record when a handoff step installs it.
type Segment struct {
	Session Session
	Message *Message
	Record  string
}

// CommitSegment commits a segment (OpSegment).
func (s *Store) CommitSegment(ctx context.Context, g Segment) error {
	return s.commit(ctx, OpSegment, func(tx *sql.Tx) error {
		if g.Message != nil {
			if err := appendMessagesTx(ctx, tx, g.Session.ID, []Message{*g.Message}); err != nil {
				return err
			}
			if err := putSessionTx(ctx, tx, g.Session); err != nil {
				return err
			}
		}
		if g.Record != "" {
			return putRetryRecordTx(ctx, tx, g.Session.ID, g.Record)
		}
		return nil
	})
}

// CommitGoalStart persists the Goal a plan handoff constructs and clears
// the session's retry record with it (OpGoal): the Goal is the recovery
// boundary from then on.
func (s *Store) CommitGoalStart(ctx context.Context, g GoalRow) error {
	return s.commit(ctx, OpGoal, func(tx *sql.Tx) error {
		if err := putGoalTx(ctx, tx, g); err != nil {
			return err
		}
		return deleteRetryRecordTx(ctx, tx, g.SessionID)
	})
}
