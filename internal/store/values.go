package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Value reads the value key of session id ([Store.PutValue]); ok is false
// when there is none.
func (s *Store) Value(ctx context.Context, id, key string) (value string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT value FROM session_values WHERE session_id = ? AND key = ?`, id, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// PutValue writes the value key of session id (what the application keeps
// per session beside its tables: the script engine's position). It is
// deleted with the session ([Store.DeleteSession], in the transaction that
// deletes the session's row), and written only while that row exists: a
// write racing the delete fails with [ErrNotFound] and leaves no row
// behind.
func (s *Store) PutValue(ctx context.Context, id, key, value string) error {
	return s.commit(ctx, OpOther, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO session_values (session_id, key, value)
			SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?)
			ON CONFLICT(session_id, key) DO UPDATE SET value = excluded.value`, id, key, value, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		return nil
	})
}
