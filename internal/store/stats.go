package store

import (
	"context"
	"database/sql"
)

// Stats are counts for `planbridge doctor`.
type Stats struct {
	Sessions        int
	InPlan          int
	BlockedTotal    int64 // tool calls refused by Plan
	RefusedTotal    int64 // tool calls refused for other reasons
	RetryPending    int
	Proposals       map[string]int // by status
	Goals           map[string]int // by status, not cleared
	Implementations map[string]int // tracked accepted plans by status
}

// Stats counts what doctor reports. JSON columns are read with SQLite's
// json_extract; a corrupt row counts as "corrupt".
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Proposals: map[string]int{}, Goals: map[string]int{}, Implementations: map[string]int{}}
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(plan),0), COALESCE(SUM(blocked_total),0), COALESCE(SUM(refused_total),0) FROM sessions`).
		Scan(&st.Sessions, &st.InPlan, &st.BlockedTotal, &st.RefusedTotal)
	if err != nil {
		return st, err
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM retry_records`).Scan(&st.RetryPending); err != nil {
		return st, err
	}
	groups := []struct {
		q   string
		out map[string]int
	}{
		{`SELECT status, COUNT(*) FROM proposals GROUP BY status`, st.Proposals},
		{`SELECT CASE WHEN json_valid(data) THEN json_extract(data, '$.status') ELSE 'corrupt' END, COUNT(*) FROM goals WHERE cleared = 0 GROUP BY 1`, st.Goals},
		{`SELECT CASE WHEN json_valid(plan) THEN json_extract(plan, '$.status') ELSE 'corrupt' END, COUNT(*) FROM tracking WHERE plan != '' GROUP BY 1`, st.Implementations},
	}
	for _, g := range groups {
		if err := countInto(ctx, s.db, g.q, g.out); err != nil {
			return st, err
		}
	}
	return st, nil
}

func countInto(ctx context.Context, db *sql.DB, q string, out map[string]int) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k sql.NullString
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		out[k.String] += n
	}
	return rows.Err()
}
