package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FilesLeftError is [Store.DeleteSession]'s error when the session is
// deleted (its rows are gone) but its files could not all be removed;
// they stay under a name [SessionDirs] does not count. Its text is the
// removal's.
type FilesLeftError struct {
	Dir string // where the files stay
	Err error
}

func (e *FilesLeftError) Error() string { return e.Err.Error() }
func (e *FilesLeftError) Unwrap() error { return e.Err }

// DeleteSession removes session id: every row (events, transcript,
// proposal, retry record, tracking, edited files, Goals, queued input,
// parked plans, approval outcomes, the session's values ([Store.PutValue]),
// share rooms and their links, the session row) in one transaction, and
// its directory ([SessionDir]). The directory goes aside first (a name
// [SessionDirs] does not count), then the rows, then the files: a crash
// between leaves rows without a directory or a stray directory, never a
// directory whose rows are missing, and the next start settles it
// ([Store.FinishDeletes]). If the rows cannot be deleted the
// directory is put back (best effort) and the session is as it was; a
// failure after the rows are gone is a [*FilesLeftError].
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	dir := SessionDir(s.Dir(), id)
	trash := filepath.Join(filepath.Dir(dir), ".deleted-"+id)
	// A directory an earlier delete left aside (killed after its move)
	// while the session has a directory again (it was used after the
	// restart) holds the session's earlier files, which the start told
	// the person to move back by hand: rename cannot replace it, so it
	// goes inside the session's directory first and aside with it. Only
	// once the rows are gone is it removed with the rest; a delete whose
	// rows remain (a failed commit, a crash) loses none of it. Without a
	// session directory the stray stays, to be put back if the rows
	// cannot go.
	earlier := filepath.Join(dir, earlierAside)
	for n := 2; ; n++ { // one a crash left there stays too
		if _, err := os.Lstat(earlier); err != nil { // free (or unreadable: the move says why)
			break
		}
		earlier = filepath.Join(dir, fmt.Sprintf("%s-%d", earlierAside, n))
	}
	moved := false
	if _, err := os.Lstat(dir); err == nil {
		if fi, err := os.Lstat(trash); err == nil && fi.IsDir() {
			if err := os.Rename(trash, earlier); err != nil {
				return fmt.Errorf("delete session %s: %w", id, err)
			}
			moved = true
		} else if err == nil { // no directory planbridge left: a link goes, never its target
			if err := os.Remove(trash); err != nil {
				return fmt.Errorf("delete session %s: %w", id, err)
			}
		}
	}
	if err := os.Rename(dir, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
		if moved {
			os.Rename(earlier, trash) //nolint:errcheck // best effort: as it was
		}
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := s.deleteRows(ctx, id); err != nil {
		// Best effort: put it back, and the earlier files where they were.
		if os.Rename(trash, dir) == nil && moved {
			os.Rename(earlier, trash) //nolint:errcheck
		}
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return &FilesLeftError{Dir: trash, Err: err}
	}
	return nil
}

// FinishDeletes settles the deletes a killed process left half done (a
// session directory moved aside as ".deleted-<id>", see
// [Store.DeleteSession]): where the session's rows are gone the delete had
// committed, and the moved directory is removed; where they remain it had
// not, and the directory is put back (its plans, archives and review
// records with it). Only a real directory of that name is touched, never
// through a link. The server calls it under the state directory's lock,
// before any session is used, so no delete of this process is in flight.
//
// One it cannot settle never stops the others, nor the server: it is left
// as it is — nothing is removed whose session's rows remain — and
// reported in unfinished, one sentence each naming the session, the
// directory and what to do (a moved directory that cannot be removed
// holds only a deleted session's files; one that cannot be put back, or
// whose session has a directory again, holds a live session's files,
// tried again at every start). err is only for a sessions directory that
// cannot be read at all.
func (s *Store) FinishDeletes(ctx context.Context) (unfinished []string, err error) {
	base := filepath.Join(s.dir, "sessions")
	ents, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), ".deleted-")
		if !ok || id == "" || !e.IsDir() {
			continue
		}
		if msg := s.finishDelete(ctx, id, filepath.Join(base, e.Name())); msg != "" {
			unfinished = append(unfinished, msg)
		}
	}
	return unfinished, nil
}

// earlierAside is where [Store.DeleteSession] keeps, inside the session's
// directory while it goes aside, the files an earlier interrupted delete
// left aside.
const earlierAside = ".earlier-deleted"

// SetAside reports where session id's files stay when an interrupted
// delete set them aside and could not put them back ([Store.FinishDeletes]
// says so at start): the session has no directory of its own and its
// files are in dir. ok false: its files are where they belong.
func (s *Store) SetAside(id string) (dir string, ok bool) {
	if _, err := os.Lstat(SessionDir(s.dir, id)); !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	dir = filepath.Join(s.dir, "sessions", ".deleted-"+id)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", false
	}
	return dir, true
}

// finishDelete settles the delete of session id whose directory was moved
// to trash, or says why it could not.
func (s *Store) finishDelete(ctx context.Context, id, trash string) string {
	_, err := s.GetSession(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		if err := os.RemoveAll(trash); err != nil {
			return fmt.Sprintf("the files of deleted session %s could not all be removed (%v); they stay in %s, which planbridge never reads: remove it by hand", id, err, trash)
		}
		return ""
	case err != nil:
		return fmt.Sprintf("an interrupted delete of session %s could not be settled (%v); its files stay in %s and the next start tries again", id, err, trash)
	}
	dir := SessionDir(s.dir, id)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Sprintf("session %s, whose delete was interrupted, has a directory again; its earlier files stay in %s: move what you need back into %s by hand", id, trash, dir)
	}
	if err := os.Rename(trash, dir); err != nil {
		return fmt.Sprintf("the files of session %s could not be put back after an interrupted delete (%v); they stay in %s: move it to %s by hand before using the session", id, err, trash, dir)
	}
	return ""
}

func (s *Store) deleteRows(ctx context.Context, id string) error {
	return s.commit(ctx, OpDelete, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM share_links WHERE room_id IN (SELECT id FROM share_rooms WHERE session_id = ?)`,
			`DELETE FROM share_rooms WHERE session_id = ?`,
			`DELETE FROM queued_input WHERE session_id = ?`,
			`DELETE FROM parked_plans WHERE session_id = ?`,
			`DELETE FROM approval_outcomes WHERE session_id = ?`,
			`DELETE FROM session_values WHERE session_id = ?`,
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
