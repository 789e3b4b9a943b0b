package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ShareRoom is one browser share room of a session (package share owns its
// meaning). A room is live until EndedAt is set.
type ShareRoom struct {
	ID        string
	SessionID string
	CreatedAt time.Time
	// Set when the room ended: why (Reason, Message for the page), when,
	// and, for a Worktree handoff, the room and session it continues in.
	Ended           bool
	EndedAt         time.Time
	Reason          string
	Message         string
	ContinueRoom    string
	ContinueSession string
	// Links are the room's links, oldest first.
	Links []ShareLink
}

// ShareLink is one share link. Hash is the hex SHA-256 of the link's
// secret: the secret itself is never stored.
type ShareLink struct {
	Hash      string
	Tier      string
	ExpiresAt time.Time
	// Inherited marks a link carried over from the room this one continues
	// (a Worktree handoff), not minted for it.
	Inherited bool
}

// ShareEnding is what [Store.EndShareRoom] records.
type ShareEnding struct {
	Reason          string
	Message         string
	ContinueRoom    string
	ContinueSession string
	// KeepLinks keeps the room's link hashes; otherwise they are deleted.
	KeepLinks bool
	// At is when the room ended (default now).
	At time.Time
}

// AddShareLinks records links of room r, creating the room row first if it
// does not exist (r.Links is ignored; links is what is added). One
// transaction.
func (s *Store) AddShareLinks(ctx context.Context, r ShareRoom, links []ShareLink) error {
	return s.commit(ctx, OpOther, func(tx *sql.Tx) error {
		created := r.CreatedAt
		if created.IsZero() {
			created = time.Now()
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO share_rooms (id, session_id, created_at) VALUES (?, ?, ?)
			ON CONFLICT(id) DO NOTHING`, r.ID, r.SessionID, stamp(created))
		if err != nil {
			return err
		}
		for _, l := range links {
			_, err := tx.ExecContext(ctx, `INSERT INTO share_links (room_id, hash, tier, expires_at, inherited) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT(room_id, hash) DO UPDATE SET tier = excluded.tier, expires_at = excluded.expires_at, inherited = excluded.inherited`,
				r.ID, l.Hash, l.Tier, stamp(l.ExpiresAt), l.Inherited)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// EndShareRoom marks room id ended with e, deleting its links unless
// e.KeepLinks. Ending a room that does not exist is [ErrNotFound].
func (s *Store) EndShareRoom(ctx context.Context, id string, e ShareEnding) error {
	at := e.At
	if at.IsZero() {
		at = time.Now()
	}
	return s.commit(ctx, OpOther, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE share_rooms SET ended = 1, ended_at = ?, reason = ?, message = ?,
			continue_room = ?, continue_session = ? WHERE id = ?`,
			stamp(at), e.Reason, e.Message, e.ContinueRoom, e.ContinueSession, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("share room %s: %w", id, ErrNotFound)
		}
		if !e.KeepLinks {
			_, err = tx.ExecContext(ctx, `DELETE FROM share_links WHERE room_id = ?`, id)
		}
		return err
	})
}

// ShareRooms returns every live room and the keepEnded most recently ended
// ones, each with its links; ended rooms older than those are deleted with
// their links. Live rooms come first, oldest first.
func (s *Store) ShareRooms(ctx context.Context, keepEnded int) ([]ShareRoom, error) {
	err := s.commit(ctx, OpOther, func(tx *sql.Tx) error {
		old := `SELECT id FROM share_rooms WHERE ended = 1 ORDER BY ended_at DESC, rowid DESC LIMIT -1 OFFSET ?`
		if _, err := tx.ExecContext(ctx, `DELETE FROM share_links WHERE room_id IN (`+old+`)`, keepEnded); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM share_rooms WHERE id IN (`+old+`)`, keepEnded)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("prune ended share rooms: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, session_id, created_at, ended, ended_at, reason, message, continue_room, continue_session
		FROM share_rooms ORDER BY ended, ended_at, rowid`)
	if err != nil {
		return nil, err
	}
	var out []ShareRoom
	idx := map[string]int{}
	for rows.Next() {
		var r ShareRoom
		var created, ended string
		if err := rows.Scan(&r.ID, &r.SessionID, &created, &r.Ended, &ended, &r.Reason, &r.Message, &r.ContinueRoom, &r.ContinueSession); err != nil {
			rows.Close()
			return nil, err
		}
		r.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		r.EndedAt, _ = time.Parse(time.RFC3339Nano, ended)
		idx[r.ID] = len(out)
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = s.db.QueryContext(ctx, `SELECT room_id, hash, tier, expires_at, inherited FROM share_links ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var room, exp string
		var l ShareLink
		if err := rows.Scan(&room, &l.Hash, &l.Tier, &exp, &l.Inherited); err != nil {
			return nil, err
		}
		i, ok := idx[room]
		if !ok {
			continue
		}
		if l.ExpiresAt, err = time.Parse(time.RFC3339Nano, exp); err != nil {
			return nil, fmt.Errorf("share link of room %s: bad expiry %q", room, exp)
		}
		out[i].Links = append(out[i].Links, l)
	}
	return out, rows.Err()
}

// stamp formats t as UTC RFC 3339 with all nine fraction digits, so that
// text order is time order; [time.RFC3339Nano] parses it back.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }
