package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Proposal is a session's proposal. Path is session-relative (under the
// work:// root) and holds a copy of the body; Body is the text whose hash
// is Hash ("" for rows written before the body was stored).
type Proposal struct {
	SessionID    string
	Status       string
	Title        string
	Path         string
	Hash         string
	Body         string
	PersonEdited bool
	Selection    string // JSON, owned by the approval model
	Rejections   int64
	UpdatedAt    time.Time
}

// putProposalTx inserts or replaces a session's proposal row.
func putProposalTx(ctx context.Context, tx *sql.Tx, p Proposal) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO proposals (session_id, status, title, path, hash, body, person_edited, selection, rejections, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET status=excluded.status, title=excluded.title,
		path=excluded.path, hash=excluded.hash, body=excluded.body, person_edited=excluded.person_edited, selection=excluded.selection,
		rejections=excluded.rejections, updated_at=excluded.updated_at`,
		p.SessionID, p.Status, p.Title, p.Path, p.Hash, p.Body, p.PersonEdited, p.Selection, p.Rejections, now())
	if err != nil {
		return fmt.Errorf("save proposal of %s: %w", p.SessionID, err)
	}
	return nil
}

// PutProposal is [putProposalTx] in its own transaction.
func (s *Store) PutProposal(ctx context.Context, p Proposal) error {
	return s.commit(ctx, OpProposal, func(tx *sql.Tx) error { return putProposalTx(ctx, tx, p) })
}

// GetProposal loads a session's proposal; [ErrNotFound] if it has none.
func (s *Store) GetProposal(ctx context.Context, sessionID string) (Proposal, error) {
	var p Proposal
	var updated string
	err := s.db.QueryRowContext(ctx, `SELECT session_id, status, title, path, hash, body, person_edited, selection, rejections, updated_at
		FROM proposals WHERE session_id = ?`, sessionID).Scan(&p.SessionID, &p.Status, &p.Title, &p.Path, &p.Hash, &p.Body,
		&p.PersonEdited, &p.Selection, &p.Rejections, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("proposal of %s: %w", sessionID, ErrNotFound)
	}
	p.UpdatedAt, _ = time.Parse(time.RFC3339Nano, updated)
	return p, err
}

// putRetryRecordTx stores a session's retry record (opaque JSON).
func putRetryRecordTx(ctx context.Context, tx *sql.Tx, sessionID, data string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO retry_records (session_id, data, updated_at) VALUES (?,?,?)
		ON CONFLICT(session_id) DO UPDATE SET data=excluded.data, updated_at=excluded.updated_at`, sessionID, data, now())
	if err != nil {
		return fmt.Errorf("save retry record of %s: %w", sessionID, err)
	}
	return nil
}

// PutRetryRecord is [putRetryRecordTx] in its own transaction.
func (s *Store) PutRetryRecord(ctx context.Context, sessionID, data string) error {
	return s.commit(ctx, OpRecord, func(tx *sql.Tx) error { return putRetryRecordTx(ctx, tx, sessionID, data) })
}

// deleteRetryRecordTx removes a session's retry record.
func deleteRetryRecordTx(ctx context.Context, tx *sql.Tx, sessionID string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM retry_records WHERE session_id = ?`, sessionID)
	return err
}

// GetRetryRecord returns a session's retry record; [ErrNotFound] if none.
func (s *Store) GetRetryRecord(ctx context.Context, sessionID string) (string, error) {
	var data string
	err := s.db.QueryRowContext(ctx, `SELECT data FROM retry_records WHERE session_id = ?`, sessionID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("retry record of %s: %w", sessionID, ErrNotFound)
	}
	return data, err
}

// Tracking is a session's todo list and accepted-plan progress (JSON owned
// by the session).
type Tracking struct {
	Todos string
	Plan  string
}

// GetTracking loads a session's tracking row (zero value if none).
func (s *Store) GetTracking(ctx context.Context, sessionID string) (Tracking, error) {
	var t Tracking
	err := s.db.QueryRowContext(ctx, `SELECT todos, plan FROM tracking WHERE session_id = ?`, sessionID).Scan(&t.Todos, &t.Plan)
	if errors.Is(err, sql.ErrNoRows) {
		return Tracking{Todos: "[]"}, nil
	}
	return t, err
}

// putTrackingTx stores a session's tracking row.
func putTrackingTx(ctx context.Context, tx *sql.Tx, sessionID string, t Tracking) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO tracking (session_id, todos, plan, updated_at) VALUES (?,?,?,?)
		ON CONFLICT(session_id) DO UPDATE SET todos=excluded.todos, plan=excluded.plan, updated_at=excluded.updated_at`,
		sessionID, t.Todos, t.Plan, now())
	if err != nil {
		return fmt.Errorf("save tracking of %s: %w", sessionID, err)
	}
	return nil
}

// PutTracking is [putTrackingTx] in its own transaction.
func (s *Store) PutTracking(ctx context.Context, sessionID string, t Tracking) error {
	return s.commit(ctx, OpTracking, func(tx *sql.Tx) error { return putTrackingTx(ctx, tx, sessionID, t) })
}

// GoalRow is a stored Goal (Data is the goal package's JSON).
type GoalRow struct {
	ID        string
	SessionID string
	Data      string
	Kickoff   string // pending kickoff prompt, "" once sent and settled
	Cleared   bool
}

// putGoalTx inserts or replaces a Goal row.
func putGoalTx(ctx context.Context, tx *sql.Tx, g GoalRow) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO goals (id, session_id, data, kickoff, cleared, updated_at) VALUES (?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET data=excluded.data, kickoff=excluded.kickoff, cleared=excluded.cleared, updated_at=excluded.updated_at`,
		g.ID, g.SessionID, g.Data, g.Kickoff, g.Cleared, now())
	if err != nil {
		return fmt.Errorf("save goal %s: %w", g.ID, err)
	}
	return nil
}

// goalDispatchedTx clears the pending kickoff of stored Goal g.ID (its
// data and cleared flag stay as stored).
func goalDispatchedTx(ctx context.Context, tx *sql.Tx, g GoalRow) error {
	if _, err := tx.ExecContext(ctx, `UPDATE goals SET kickoff = '', updated_at = ? WHERE id = ? AND session_id = ?`,
		now(), g.ID, g.SessionID); err != nil {
		return fmt.Errorf("mark goal %s dispatched: %w", g.ID, err)
	}
	return nil
}

// PutGoal is [putGoalTx] in its own transaction.
func (s *Store) PutGoal(ctx context.Context, g GoalRow) error {
	return s.commit(ctx, OpGoal, func(tx *sql.Tx) error { return putGoalTx(ctx, tx, g) })
}

// CurrentGoal returns the session's most recent Goal that was not cleared;
// [ErrNotFound] if none.
func (s *Store) CurrentGoal(ctx context.Context, sessionID string) (GoalRow, error) {
	var g GoalRow
	err := s.db.QueryRowContext(ctx, `SELECT id, session_id, data, kickoff, cleared FROM goals
		WHERE session_id = ? AND cleared = 0 ORDER BY updated_at DESC LIMIT 1`, sessionID).Scan(&g.ID, &g.SessionID, &g.Data, &g.Kickoff, &g.Cleared)
	if errors.Is(err, sql.ErrNoRows) {
		return g, fmt.Errorf("goal of %s: %w", sessionID, ErrNotFound)
	}
	return g, err
}

// CountGoals counts a session's Goals (for tests and doctor).
func (s *Store) CountGoals(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM goals WHERE session_id = ?`, sessionID).Scan(&n)
	return n, err
}
