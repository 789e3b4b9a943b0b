package store

import (
	"context"
	"database/sql"
	"fmt"
)

// OpQueue names the commits of the pending-input queue.
const OpQueue = "queue"

// QueuedInput is one follow-up waiting in a session's queue.
type QueuedInput struct {
	ID      int64 // given by EnqueueInput
	Text    string
	Display string
	// Guest marks a prompt sent from a share link: nobody answers for
	// its turn, before or after a restart.
	Guest bool
}

// EnqueueInput appends a follow-up to a session's queue and returns its id.
func (s *Store) EnqueueInput(ctx context.Context, sessionID string, q QueuedInput) (int64, error) {
	var id int64
	err := s.commit(ctx, OpQueue, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO queued_input (session_id, text, display, guest, created_at) VALUES (?,?,?,?,?)`,
			sessionID, q.Text, q.Display, q.Guest, now())
		if err != nil {
			return fmt.Errorf("queue input of %s: %w", sessionID, err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

// QueuedInputs lists a session's queue, oldest first.
func (s *Store) QueuedInputs(ctx context.Context, sessionID string) ([]QueuedInput, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, text, display, guest FROM queued_input WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []QueuedInput
	for rows.Next() {
		var q QueuedInput
		if err := rows.Scan(&q.ID, &q.Text, &q.Display, &q.Guest); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// dequeueInputTx removes queued input id inside a caller's transaction
// (the one that stores it as a prompt, so it runs exactly once).
func dequeueInputTx(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM queued_input WHERE id = ?`, id)
	return err
}

// DropQueuedInput removes queued inputs (all of the session's when ids is
// empty).
func (s *Store) DropQueuedInput(ctx context.Context, sessionID string, ids ...int64) error {
	return s.commit(ctx, OpQueue, func(tx *sql.Tx) error {
		if len(ids) == 0 {
			_, err := tx.ExecContext(ctx, `DELETE FROM queued_input WHERE session_id = ?`, sessionID)
			return err
		}
		for _, id := range ids {
			if err := dequeueInputTx(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
}
