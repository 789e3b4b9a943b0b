package store

import (
	"context"
	"database/sql"
	"fmt"
)

// DeleteSession removes every row of session id (events, transcript,
// proposal, retry record, tracking, edited files, Goals, queued input,
// share rooms and their links, the session row) in one transaction. It
// touches no file: the caller removes the session directory.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.commit(ctx, OpDelete, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM share_links WHERE room_id IN (SELECT id FROM share_rooms WHERE session_id = ?)`,
			`DELETE FROM share_rooms WHERE session_id = ?`,
			`DELETE FROM queued_input WHERE session_id = ?`,
			`DELETE FROM goals WHERE session_id = ?`,
			`DELETE FROM edited_files WHERE session_id = ?`,
			`DELETE FROM tracking WHERE session_id = ?`,
			`DELETE FROM retry_records WHERE session_id = ?`,
			`DELETE FROM proposals WHERE session_id = ?`,
			`DELETE FROM messages WHERE session_id = ?`,
			`DELETE FROM events WHERE session_id = ?`,
			`DELETE FROM sessions WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("delete session %s: %w", id, err)
			}
		}
		return nil
	})
}

// LiveShareRooms counts the share rooms of session id that have not ended.
func (s *Store) LiveShareRooms(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM share_rooms WHERE session_id = ? AND ended = 0`, id).Scan(&n)
	return n, err
}
