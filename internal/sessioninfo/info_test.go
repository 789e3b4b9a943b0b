package sessioninfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"planbridge/internal/store"
	"planbridge/proposal"
)

// TestStored: a session not loaded is summarised as opening it would
// show it, from a real store, changing nothing: a proposal stays
// proposed (and shown) only with Plan on and its plan file matching its
// hash, else it is reported a draft; with its files set aside by an
// interrupted delete it is reported as stored, unjudged; a staged plan
// file of the row's text counts as the plan file (opening installs it); the row's
// fields, the fork link and the log's last number come along.
func TestStored(t *testing.T) {
	ctx := context.Background()
	const body = "# Tidy\n\n1. Do it."
	for _, tc := range []struct {
		name         string
		plan         bool
		file         string // the plan file's content ("": none)
		pending      string // a staged plan file's content ("": none)
		aside        bool
		wantStatus   string
		wantApproval string
	}{
		{name: "presented again", plan: true, file: body + "\n", wantStatus: "proposed", wantApproval: "shown"},
		{name: "Plan off", plan: false, file: body + "\n", wantStatus: "draft"},
		{name: "file changed", plan: true, file: "# Other\n", wantStatus: "draft"},
		{name: "file gone", plan: true, wantStatus: "draft"},
		{name: "set aside", plan: true, aside: true, wantStatus: "proposed"},
		// A publish killed between its row's commit and the replacement:
		// opening installs the staged file, so it is shown.
		{name: "staged, committed", plan: true, file: "# Older\n", pending: body + "\n", wantStatus: "proposed", wantApproval: "shown"},
		{name: "staged, not committed", plan: true, file: "# Older\n", pending: "# Newer\n", wantStatus: "draft"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := store.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			row := store.Session{ID: "s-1", Workspace: "/w", Title: "T", Plan: tc.plan, Mode: "ask", ForkedTo: "s-2", BlockedTotal: 3}
			if err := st.PutSession(ctx, row); err != nil {
				t.Fatal(err)
			}
			p := store.Proposal{SessionID: "s-1", Status: "proposed", Title: "Tidy", Path: "plans/current.md", Hash: proposal.HashBody(body), Body: body}
			if err := st.PutProposal(ctx, p); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(store.SessionDir(dir, "s-1"), "work")
			if err := os.MkdirAll(filepath.Join(work, "plans"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(work, "plans", "current.md"), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.pending != "" {
				if err := os.WriteFile(filepath.Join(work, "plans", ".current.md.pending"), []byte(tc.pending), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.aside {
				if err := os.Rename(store.SessionDir(dir, "s-1"), filepath.Join(dir, "sessions", ".deleted-s-1")); err != nil {
					t.Fatal(err)
				}
			}
			in := Stored(ctx, st, row)
			if in.ProposalStatus != tc.wantStatus || in.Approval != tc.wantApproval || in.ProposalTitle != "Tidy" {
				t.Errorf("proposal %s, approval %q, title %q; want %s, %q", in.ProposalStatus, in.Approval, in.ProposalTitle, tc.wantStatus, tc.wantApproval)
			}
			if in.ID != "s-1" || in.ForkedTo != "s-2" || in.BlockedTotal != 3 || in.Busy || in.Plan != tc.plan {
				t.Errorf("row fields: %+v", in)
			}
			if got, err := st.GetProposal(ctx, "s-1"); err != nil || got.Status != "proposed" {
				t.Errorf("the stored proposal changed: %+v, %v", got, err)
			}
			if s := in.Status(); s.ProposalStatus != in.ProposalStatus || s.ForkedTo != "s-2" || s.BlockedTotal != 3 {
				t.Errorf("status event %+v", s)
			}
		})
	}
	// No proposal: "none", and nothing else judged.
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if in := Stored(ctx, st, store.Session{ID: "s-9"}); in.ProposalStatus != "none" || in.Approval != "" || in.AcceptedPlan != nil || in.Goal != "" {
		t.Errorf("a bare session: %+v", in)
	}
}
