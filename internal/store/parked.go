package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ParkedPlan is a plan approved and archived but not started: its
// archive (session-relative path + hash), the whole selection (JSON owned
// by the approval model), and the workspace HEAD when it was approved.
type ParkedPlan struct {
	ID, SessionID, Title, Path, Hash, Selection string
	Head, Branch                                string // HEAD commit and branch at approval ("" outside git)
	CreatedAt                                   time.Time
	// StartedAt is zero while the plan is parked; StartedLocation is the
	// Location it was started with.
	StartedAt       time.Time
	StartedLocation string
}

// ErrAlreadyStarted reports a parked plan that was started already.
var ErrAlreadyStarted = errors.New("this parked plan was already started")

// OpPark is the commit that parks a plan; OpOutcome records an approval
// outcome on its own.
const (
	OpPark    = "park"
	OpOutcome = "outcome"
)

// Park is the commit of an approve-and-park: the parked plan, the card's
// outcome and the proposal (status parked), together.
type Park struct {
	Plan     ParkedPlan
	Outcome  ApprovalOutcome
	Proposal Proposal
}

// CommitPark commits a park (OpPark).
func (s *Store) CommitPark(ctx context.Context, p Park) error {
	return s.commit(ctx, OpPark, func(tx *sql.Tx) error {
		if err := putParkedPlanTx(ctx, tx, p.Plan); err != nil {
			return err
		}
		if err := putApprovalOutcomeTx(ctx, tx, p.Outcome); err != nil {
			return err
		}
		return putProposalTx(ctx, tx, p.Proposal)
	})
}

// putParkedPlanTx stores p, created at p.CreatedAt (now when zero).
func putParkedPlanTx(ctx context.Context, tx *sql.Tx, p ParkedPlan) error {
	created := now()
	if !p.CreatedAt.IsZero() {
		created = p.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO parked_plans (id, session_id, title, path, hash, selection, head, branch, created_at)
		VALUES (?,?,?,?,?,?,?,?,?)`, p.ID, p.SessionID, p.Title, p.Path, p.Hash, p.Selection, p.Head, p.Branch, created)
	if err != nil {
		return fmt.Errorf("park plan: %w", err)
	}
	return nil
}

// markParkedStartedTx marks a parked plan started with location; it fails
// with [ErrAlreadyStarted] if it was, so a plan starts at most once.
func markParkedStartedTx(ctx context.Context, tx *sql.Tx, id, location string) error {
	res, err := tx.ExecContext(ctx, `UPDATE parked_plans SET started_at = ?, started_location = ? WHERE id = ? AND started_at = ''`, now(), location, id)
	if err != nil {
		return fmt.Errorf("start parked plan: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrAlreadyStarted
	}
	return nil
}

const parkedCols = `id, session_id, title, path, hash, selection, head, branch, created_at, started_at, started_location`

func scanParked(sc interface{ Scan(...any) error }) (ParkedPlan, error) {
	var p ParkedPlan
	var created, started string
	if err := sc.Scan(&p.ID, &p.SessionID, &p.Title, &p.Path, &p.Hash, &p.Selection, &p.Head, &p.Branch, &created, &started, &p.StartedLocation); err != nil {
		return p, err
	}
	p.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	if started != "" {
		p.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
	}
	return p, nil
}

// GetParkedPlan loads one parked plan ([ErrNotFound] if there is none).
func (s *Store) GetParkedPlan(ctx context.Context, id string) (ParkedPlan, error) {
	p, err := scanParked(s.db.QueryRowContext(ctx, `SELECT `+parkedCols+` FROM parked_plans WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// ParkedPlans lists parked plans, oldest first: those of sessionID, or of
// every session when it is empty; started ones only when all is set.
func (s *Store) ParkedPlans(ctx context.Context, sessionID string, all bool) ([]ParkedPlan, error) {
	q := `SELECT ` + parkedCols + ` FROM parked_plans WHERE (? = '' OR session_id = ?) AND (? OR started_at = '') ORDER BY rowid`
	rows, err := s.db.QueryContext(ctx, q, sessionID, sessionID, all)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ParkedPlan{}
	for rows.Next() {
		p, err := scanParked(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ApprovalOutcome is how one approval presentation (attempt) ended.
type ApprovalOutcome struct {
	SessionID, Attempt, Outcome, Title, Hash string
	At                                       time.Time
}

// PutApprovalOutcome records how an attempt ended; the first outcome of
// an attempt is kept (a later one for the same attempt is ignored).
func (s *Store) PutApprovalOutcome(ctx context.Context, o ApprovalOutcome) error {
	return s.commit(ctx, OpOutcome, func(tx *sql.Tx) error { return putApprovalOutcomeTx(ctx, tx, o) })
}

func putApprovalOutcomeTx(ctx context.Context, tx *sql.Tx, o ApprovalOutcome) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO approval_outcomes (session_id, attempt, outcome, title, hash, at) VALUES (?,?,?,?,?,?)
		ON CONFLICT(session_id, attempt) DO NOTHING`, o.SessionID, o.Attempt, o.Outcome, o.Title, o.Hash, now())
	if err != nil {
		return fmt.Errorf("record approval outcome: %w", err)
	}
	return nil
}

// ApprovalOutcomes lists a session's recorded outcomes, oldest first.
func (s *Store) ApprovalOutcomes(ctx context.Context, sessionID string) ([]ApprovalOutcome, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, attempt, outcome, title, hash, at FROM approval_outcomes WHERE session_id = ? ORDER BY rowid`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ApprovalOutcome{}
	for rows.Next() {
		var o ApprovalOutcome
		var at string
		if err := rows.Scan(&o.SessionID, &o.Attempt, &o.Outcome, &o.Title, &o.Hash, &at); err != nil {
			return nil, err
		}
		o.At, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, o)
	}
	return out, rows.Err()
}
