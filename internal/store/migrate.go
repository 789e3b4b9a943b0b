package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings the schema from version i to i+1. Never edit a
// released migration: append a new one.
var migrations = []string{
	// 1: sessions, events, transcript messages, key-value.
	`CREATE TABLE sessions (
		id TEXT PRIMARY KEY,
		workspace TEXT NOT NULL,
		title TEXT NOT NULL DEFAULT '',
		plan INTEGER NOT NULL DEFAULT 0,
		mode TEXT NOT NULL DEFAULT 'ask',
		blocked_total INTEGER NOT NULL DEFAULT 0,
		plan_episode INTEGER NOT NULL DEFAULT 0,
		template_episode INTEGER NOT NULL DEFAULT 0,
		segment INTEGER NOT NULL DEFAULT 0,
		created_at TEXT NOT NULL,
		updated_at TEXT NOT NULL
	);
	CREATE TABLE events (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		seq INTEGER NOT NULL,
		kind TEXT NOT NULL,
		data TEXT NOT NULL,
		time TEXT NOT NULL,
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE messages (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		idx INTEGER NOT NULL,
		segment INTEGER NOT NULL DEFAULT 0,
		role TEXT NOT NULL,
		content TEXT NOT NULL DEFAULT '',
		tool_calls TEXT NOT NULL DEFAULT '',
		tool_call_id TEXT NOT NULL DEFAULT '',
		name TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (session_id, idx)
	);
	CREATE TABLE kv (
		key TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);`,
	// 2: the session's one proposal (metadata; the body is a work:// file).
	`CREATE TABLE proposals (
		session_id TEXT PRIMARY KEY REFERENCES sessions(id),
		status TEXT NOT NULL,
		title TEXT NOT NULL DEFAULT '',
		path TEXT NOT NULL,
		hash TEXT NOT NULL,
		person_edited INTEGER NOT NULL DEFAULT 0,
		selection TEXT NOT NULL DEFAULT '',
		rejections INTEGER NOT NULL DEFAULT 0,
		updated_at TEXT NOT NULL
	);`,
	// 3: retry records of accepted plans (the step machine's state, JSON).
	`CREATE TABLE retry_records (
		session_id TEXT PRIMARY KEY REFERENCES sessions(id),
		data TEXT NOT NULL,
		updated_at TEXT NOT NULL
	);`,
	// 4: tracking: the todo list and the accepted plan's steps (JSON).
	`CREATE TABLE tracking (
		session_id TEXT PRIMARY KEY REFERENCES sessions(id),
		todos TEXT NOT NULL DEFAULT '[]',
		plan TEXT NOT NULL DEFAULT '',
		updated_at TEXT NOT NULL
	);`,
	// 5: Worktree forks (parent link, fork point, successor) and the files
	// a session edited (restored into its fork).
	`ALTER TABLE sessions ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN fork_point INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN forked_to TEXT NOT NULL DEFAULT '';
	CREATE TABLE edited_files (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		path TEXT NOT NULL,
		PRIMARY KEY (session_id, path)
	);`,
	// 6: Goals (the record is JSON owned by package goal) with the pending
	// kickoff prompt of a Goal started by a plan handoff.
	`CREATE TABLE goals (
		id TEXT PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		data TEXT NOT NULL,
		kickoff TEXT NOT NULL DEFAULT '',
		cleared INTEGER NOT NULL DEFAULT 0,
		updated_at TEXT NOT NULL
	);
	CREATE INDEX goals_by_session ON goals(session_id, updated_at);`,
	// 7: browser share rooms and their links (SHA-256 hashes of the link
	// secrets only), so a restart keeps shared sessions shared.
	`CREATE TABLE share_rooms (
		id TEXT PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		created_at TEXT NOT NULL,
		ended INTEGER NOT NULL DEFAULT 0,
		ended_at TEXT NOT NULL DEFAULT '',
		reason TEXT NOT NULL DEFAULT '',
		message TEXT NOT NULL DEFAULT '',
		continue_room TEXT NOT NULL DEFAULT '',
		continue_session TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX share_rooms_by_end ON share_rooms(ended, ended_at);
	CREATE TABLE share_links (
		room_id TEXT NOT NULL REFERENCES share_rooms(id),
		hash TEXT NOT NULL,
		tier TEXT NOT NULL,
		expires_at TEXT NOT NULL,
		inherited INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (room_id, hash)
	);`,
	// 8: tool calls refused for reasons other than Plan (unknown tools or
	// permission outside Plan), counted apart from blocked_total, which
	// counts Plan refusals only.
	`ALTER TABLE sessions ADD COLUMN refused_total INTEGER NOT NULL DEFAULT 0;`,
	// 9: the proposal's body beside its hash, so what is shown and
	// accepted never depends on a file anyone may rewrite.
	`ALTER TABLE proposals ADD COLUMN body TEXT NOT NULL DEFAULT '';`,
	// 10: the pending-input queue (a person's follow-ups waiting behind a
	// running turn), so a restart never loses one.
	`CREATE TABLE queued_input (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		text TEXT NOT NULL,
		display TEXT NOT NULL,
		created_at TEXT NOT NULL
	);
	CREATE INDEX queued_input_by_session ON queued_input(session_id, id);`,
	// 11: an assistant message's reasoning blocks (JSON, opaque), which an
	// engine must send back within a tool loop, so a conversation stored
	// step by step continues after a restart exactly as it was.
	`ALTER TABLE messages ADD COLUMN thinking TEXT NOT NULL DEFAULT '';`,
	// 12: plans approved and parked (archived, not started) and the
	// recorded outcome of every approval presentation that ended.
	`CREATE TABLE parked_plans (
		id TEXT PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		title TEXT NOT NULL DEFAULT '',
		path TEXT NOT NULL,
		hash TEXT NOT NULL,
		selection TEXT NOT NULL,
		head TEXT NOT NULL DEFAULT '',
		branch TEXT NOT NULL DEFAULT '',
		created_at TEXT NOT NULL,
		started_at TEXT NOT NULL DEFAULT '',
		started_location TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX parked_plans_by_session ON parked_plans(session_id, created_at);
	CREATE TABLE approval_outcomes (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		attempt TEXT NOT NULL,
		outcome TEXT NOT NULL,
		title TEXT NOT NULL DEFAULT '',
		hash TEXT NOT NULL DEFAULT '',
		at TEXT NOT NULL,
		PRIMARY KEY (session_id, attempt)
	);`,
	// 13: the guest mark of a queued prompt sent from a share link, so a
	// restart never gives a guest's prompt a person's powers.
	`ALTER TABLE queued_input ADD COLUMN guest INTEGER NOT NULL DEFAULT 0;`,
	// 14: values of one session (the script engine's positions), deleted
	// with it; the positions kept in kv as "script-cursor:<script>:<id>"
	// move here, and those of sessions already deleted go.
	`CREATE TABLE session_values (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		key TEXT NOT NULL,
		value TEXT NOT NULL,
		PRIMARY KEY (session_id, key)
	);
	INSERT OR REPLACE INTO session_values (session_id, key, value)
		SELECT s.id, substr(kv.key, 1, length(kv.key) - length(s.id) - 1), kv.value
		FROM kv JOIN sessions s
		ON substr(kv.key, 1, 14) = 'script-cursor:' AND substr(kv.key, length(kv.key) - length(s.id)) = ':' || s.id;
	DELETE FROM kv WHERE substr(key, 1, 14) = 'script-cursor:';`,
}

func (s *Store) migrate(ctx context.Context, steps []string) error {
	var v int
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(steps) {
		return fmt.Errorf("database schema version %d is newer than this planbridge (%d)", v, len(steps))
	}
	for i := v; i < len(steps); i++ {
		err := s.commit(ctx, "migrate", func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, steps[i]); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}
