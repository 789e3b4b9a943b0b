package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session is one row of the sessions table.
type Session struct {
	ID              string
	Workspace       string
	Title           string
	Plan            bool
	Mode            string
	BlockedTotal    int64 // tool calls refused by Plan
	RefusedTotal    int64 // tool calls refused for other reasons
	PlanEpisode     int64
	TemplateEpisode int64
	Segment         int64
	ParentID        string // the session this one was forked from
	ForkPoint       int64  // transcript index the fork starts after
	ForkedTo        string // the fork that continued this session
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

const sessionCols = `id, workspace, title, plan, mode, blocked_total, refused_total, plan_episode, template_episode, segment, parent_id, fork_point, forked_to, created_at, updated_at`

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var r Session
	var created, updated string
	if err := sc.Scan(&r.ID, &r.Workspace, &r.Title, &r.Plan, &r.Mode, &r.BlockedTotal, &r.RefusedTotal,
		&r.PlanEpisode, &r.TemplateEpisode, &r.Segment, &r.ParentID, &r.ForkPoint, &r.ForkedTo, &created, &updated); err != nil {
		return r, err
	}
	r.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	r.UpdatedAt, _ = time.Parse(time.RFC3339Nano, updated)
	return r, nil
}

// PutSession inserts or replaces the whole session row.
func (s *Store) PutSession(ctx context.Context, r Session) error {
	return s.commit(ctx, OpSession, func(tx *sql.Tx) error { return putSessionTx(ctx, tx, r) })
}

// putSessionTx is [Store.PutSession] inside a caller's transaction.
func putSessionTx(ctx context.Context, tx *sql.Tx, r Session) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	r.UpdatedAt = time.Now()
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (`+sessionCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET workspace=excluded.workspace, title=excluded.title, plan=excluded.plan,
		mode=excluded.mode, blocked_total=excluded.blocked_total, refused_total=excluded.refused_total, plan_episode=excluded.plan_episode,
		template_episode=excluded.template_episode, segment=excluded.segment, parent_id=excluded.parent_id,
		fork_point=excluded.fork_point, forked_to=excluded.forked_to, updated_at=excluded.updated_at`,
		r.ID, r.Workspace, r.Title, r.Plan, r.Mode, r.BlockedTotal, r.RefusedTotal, r.PlanEpisode, r.TemplateEpisode, r.Segment,
		r.ParentID, r.ForkPoint, r.ForkedTo,
		r.CreatedAt.UTC().Format(time.RFC3339Nano), r.UpdatedAt.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("save session %s: %w", r.ID, err)
	}
	return nil
}

// GetSession loads one session; [ErrNotFound] if it does not exist.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	r, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return r, err
}

// ListSessions returns every session, most recently updated first.
func (s *Store) ListSessions(ctx context.Context) ([]Session, error) {
	return s.querySessions(ctx, `SELECT `+sessionCols+` FROM sessions ORDER BY updated_at DESC`)
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]Session, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Event is one entry of a session's event log.
type Event struct {
	Seq  int64
	Kind string
	Data json.RawMessage
	Time time.Time
}

// AppendEvents appends events (with their already assigned sequence numbers)
// in one transaction.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	return s.commit(ctx, OpEvents, func(tx *sql.Tx) error { return appendEventsTx(ctx, tx, sessionID, evs) })
}

// appendEventsTx is [Store.AppendEvents] inside a caller's transaction.
func appendEventsTx(ctx context.Context, tx *sql.Tx, sessionID string, evs []Event) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (session_id, seq, kind, data, time) VALUES (?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range evs {
		if _, err := stmt.ExecContext(ctx, sessionID, e.Seq, e.Kind, string(e.Data), e.Time.UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("append event %d: %w", e.Seq, err)
		}
	}
	return nil
}

// Events returns the events of a session with seq > since, in order. A row
// whose data is not valid JSON is returned as kind "corrupt" with the raw text
// quoted, so one bad row never hides the rest of the log.
func (s *Store) Events(ctx context.Context, sessionID string, since int64) ([]Event, error) {
	return s.EventsPage(ctx, sessionID, since, 0)
}

// EventsPage is [Store.Events] returning at most limit events (0: all).
func (s *Store) EventsPage(ctx context.Context, sessionID string, since int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, data, time FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`, sessionID, since, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var data, t string
		if err := rows.Scan(&e.Seq, &e.Kind, &data, &t); err != nil {
			return nil, err
		}
		if json.Valid([]byte(data)) {
			e.Data = json.RawMessage(data)
		} else {
			raw, _ := json.Marshal(map[string]string{"kind": e.Kind, "raw": data})
			e.Kind, e.Data = "corrupt", raw
		}
		e.Time, _ = time.Parse(time.RFC3339Nano, t)
		out = append(out, e)
	}
	return out, rows.Err()
}

// LastSeq returns the highest event sequence number of a session (0 if none).
func (s *Store) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(seq) FROM events WHERE session_id = ?`, sessionID).Scan(&n)
	return n.Int64, err
}

// LastTurn is the highest turn number a session's stored turn_start events
// carry (0 for none), so that numbering continues after a restart. A row
// that is not valid JSON is skipped.
func (s *Store) LastTurn(ctx context.Context, sessionID string) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(CAST(json_extract(data, '$.turn') AS INTEGER)) FROM events
		WHERE session_id = ? AND kind = 'turn_start' AND json_valid(data)`, sessionID).Scan(&n)
	return n.Int64, err
}

// Message is one persisted transcript entry.
type Message struct {
	Idx        int64
	Segment    int64
	Role       string
	Content    string
	ToolCalls  string // JSON array or ""
	ToolCallID string
	Name       string
	Thinking   string // JSON array of reasoning blocks, or ""
}

// appendMessagesTx appends transcript messages inside a caller's transaction.
func appendMessagesTx(ctx context.Context, tx *sql.Tx, sessionID string, msgs []Message) error {
	for _, m := range msgs {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, idx, segment, role, content, tool_calls, tool_call_id, name, thinking) VALUES (?,?,?,?,?,?,?,?,?)`,
			sessionID, m.Idx, m.Segment, m.Role, m.Content, m.ToolCalls, m.ToolCallID, m.Name, m.Thinking)
		if err != nil {
			return fmt.Errorf("append message %d: %w", m.Idx, err)
		}
	}
	return nil
}

// AppendMessages appends transcript messages in one transaction.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []Message) error {
	return s.commit(ctx, OpTurn, func(tx *sql.Tx) error { return appendMessagesTx(ctx, tx, sessionID, msgs) })
}

// Messages returns a session's transcript in order.
func (s *Store) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT idx, segment, role, content, tool_calls, tool_call_id, name, thinking FROM messages WHERE session_id = ? ORDER BY idx`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		if err := rows.Scan(&m.Idx, &m.Segment, &m.Role, &m.Content, &m.ToolCalls, &m.ToolCallID, &m.Name, &m.Thinking); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Get reads a key of the key-value table; ok is false when absent.
func (s *Store) Get(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// Put writes a key of the key-value table.
func (s *Store) Put(ctx context.Context, key, value string) error {
	return s.commit(ctx, OpOther, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// addEditedFileTx records that a session edited path (workspace-relative).
func addEditedFileTx(ctx context.Context, tx *sql.Tx, sessionID, path string) error {
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO edited_files (session_id, path) VALUES (?, ?)`, sessionID, path)
	return err
}

// AddEditedFile is [addEditedFileTx] in its own transaction.
func (s *Store) AddEditedFile(ctx context.Context, sessionID, path string) error {
	return s.commit(ctx, OpOther, func(tx *sql.Tx) error { return addEditedFileTx(ctx, tx, sessionID, path) })
}

// EditedFiles lists the workspace-relative paths a session edited.
func (s *Store) EditedFiles(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT path FROM edited_files WHERE session_id = ? ORDER BY path`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ForksOf lists the sessions whose parent is id.
func (s *Store) ForksOf(ctx context.Context, id string) ([]Session, error) {
	return s.querySessions(ctx, `SELECT `+sessionCols+` FROM sessions WHERE parent_id = ?`, id)
}
