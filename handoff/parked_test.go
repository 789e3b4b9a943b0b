package handoff

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParkedPlan: a parked plan is started only with a time, names itself
// in its trailer when its hash is known, and the `/plan parked` list
// names each plan's id, title, short hash, Location and parking time.
func TestParkedPlan(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	hash := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name    string
		p       ParkedPlan
		started time.Time
		trailer string
	}{
		{"parked", ParkedPlan{Title: "Add a flag", Hash: hash}, time.Time{}, "Plan: Add a flag (sha256:abababababab)"},
		{"started", ParkedPlan{Title: "Add a flag", Hash: hash}, at, "Plan: Add a flag (sha256:abababababab)"},
		{"no hash", ParkedPlan{Title: "Old"}, time.Time{}, ""},
	} {
		p := c.p
		p.SetStarted(c.started)
		if p.Started != !c.started.IsZero() || (p.StartedAt != nil) != p.Started || p.Started && !p.StartedAt.Equal(c.started) {
			t.Errorf("%s: started %v at %v", c.name, p.Started, p.StartedAt)
		}
		if p.Trailer != c.trailer {
			t.Errorf("%s: trailer %q, want %q", c.name, p.Trailer, c.trailer)
		}
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), "started_at") != p.Started {
			t.Errorf("%s: %s", c.name, b)
		}
	}

	if got := ParkedList(nil); got != "No parked plans in this session." {
		t.Errorf("empty list %q", got)
	}
	got := ParkedList([]ParkedPlan{
		{ID: "pp-1", Title: "Add a flag", Hash: hash, Selection: Selection{Location: Worktree}, CreatedAt: at},
		{ID: "pp-2", Title: `Quote "this"`, Hash: "abc", Selection: Selection{Location: Here}, CreatedAt: at},
	})
	want := "2 parked plan(s):\n- pp-1 \"Add a flag\" (sha256:abababababab), worktree, parked 2026-12-01T13:00:00Z" +
		"\n- pp-2 \"Quote \\\"this\\\"\" (sha256:abc), here, parked 2026-12-01T13:00:00Z"
	if got != want {
		t.Errorf("list\n%s\nwant\n%s", got, want)
	}
}
