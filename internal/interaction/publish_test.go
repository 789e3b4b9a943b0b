package interaction

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
)

// agree fails unless the plan file is the text of the stored proposal
// (or absent with none stored) and nothing is left staged.
func agree(t *testing.T, work string, row store.Proposal, stored bool, step string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(handoff.CurrentPlan)))
	switch {
	case !stored && err == nil:
		t.Errorf("%s: a plan file %q with no proposal stored", step, b)
	case stored && (err != nil || proposal.HashBody(strings.TrimSuffix(string(b), "\n")) != row.Hash):
		t.Errorf("%s: the plan file %q (%v) is not the stored proposal %q", step, b, err, row.Body)
	}
	if _, err := os.Lstat(filepath.Join(work, filepath.FromSlash(PendingPlan))); err == nil {
		t.Errorf("%s: a staged plan file is left", step)
	}
}

// TestPublishFileAndRowAgree: whichever write of a publish fails (the
// version kept, the row's commit, the plan file's replacement), the plan
// file and the row agree afterwards — at once, or after the next load
// for a replacement that failed after the commit, which is told. Before,
// a failed commit left current.md holding the new text while the row
// held the old proposal.
func TestPublishFileAndRowAgree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		earlier bool                   // a proposal was published before
		fail    func(r *rig)           // makes the publish fail
		wantErr bool                   // Publish returns an error
		events  string                 // emitted by the failed publish
		wantB   bool                   // the row holds planB afterwards
		undo    func(r *rig)           // the disk comes back before the load
		step    func(r *rig, s string) // publishStep
	}{
		{name: "the first commit fails", fail: func(r *rig) { r.st.fail(r.st.puts + 1) }, wantErr: true},
		{name: "a later commit fails", earlier: true, fail: func(r *rig) { r.st.fail(r.st.puts + 1) }, wantErr: true},
		{name: "the version cannot be kept", earlier: true, fail: func(r *rig) { r.track.failVersions = true }, wantErr: true},
		{name: "the plan file cannot be replaced", earlier: true, wantB: true, events: "error,proposal",
			step: func(r *rig, s string) {
				if s == "committed" { // a directory holds the name: rename(2) fails
					p := filepath.Join(r.dir, filepath.FromSlash(handoff.CurrentPlan))
					os.Remove(p)
					os.MkdirAll(filepath.Join(p, "x"), 0o700)
				}
			},
			undo: func(r *rig) { os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(handoff.CurrentPlan))) }},
		{name: "nothing fails", earlier: true, wantB: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.earlier {
				r.proposed(planA)
			}
			if tc.fail != nil {
				tc.fail(r)
			}
			if tc.step != nil {
				publishStep = func(s string) { tc.step(r, s) }
				defer func() { publishStep = func(string) {} }()
			}
			err := r.card.Publish(r.ctx, "Fix the bug better", planB, false)
			if (err != nil) != tc.wantErr {
				t.Fatalf("publish: %v, want an error %v", err, tc.wantErr)
			}
			evs := r.host.take()
			if tc.events != "" && kinds(evs) != tc.events {
				t.Errorf("events %q, want %q", kinds(evs), tc.events)
			}
			row, stored := r.st.stored()
			if stored && (row.Hash == proposal.HashBody(planB)) != tc.wantB {
				t.Fatalf("the row holds %q", row.Body)
			}
			publishStep = func(string) {}
			if tc.undo == nil {
				agree(t, r.dir, row, stored, "after the publish")
			} else {
				tc.undo(r)
			}
			// A restart's load agrees too (and finishes a replacement
			// the publish could not make).
			r.card = r.open()
			if err := r.card.Load(r.ctx, true); err != nil {
				t.Fatal(err)
			}
			row, stored = r.st.stored()
			agree(t, r.dir, row, stored, "after the load")
			if mem, ok := r.memory(); stored && (!ok || mem.Status != Proposed) {
				t.Errorf("after the load the proposal is %+v (%v), not the one proposed", mem, ok)
			}
		})
	}
}

// TestOutcomeRecordFailureIsTold: an outcome whose commit fails is told
// with an error event (before, only logged).
func TestOutcomeRecordFailureIsTold(t *testing.T) {
	r := newRig(t)
	a := r.proposed(planA)
	r.st.failOutcomes = true
	if err := r.card.Cancel(r.ctx, a); err != nil {
		t.Fatal(err)
	}
	var told bool
	for _, ev := range r.host.take() {
		if e, ok := ev.(event.Error); ok && strings.Contains(e.Message, "could not record") && strings.Contains(e.Message, "disk full") {
			told = true
		}
	}
	if !told {
		t.Error("a failed outcome record was not told")
	}
}

// TestPublishKilledBetweenItsWrites: a process SIGKILLed after staging
// the new plan text, or after committing its row but before the plan
// file is replaced, leaves a state the next load settles so that the
// plan file and the row (a real SQLite file) agree: the old proposal
// with its file in the first case, the new one in the second.
func TestPublishKilledBetweenItsWrites(t *testing.T) {
	if at := os.Getenv("PB_TEST_PUBLISH_KILL_AT"); at != "" {
		publishChild(at, os.Getenv("PB_TEST_PUBLISH_STATE"))
		return
	}
	for _, at := range []string{"staged", "committed"} {
		t.Run(at, func(t *testing.T) {
			state := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestPublishKilledBetweenItsWrites$")
			cmd.Env = append(os.Environ(), "PB_TEST_PUBLISH_KILL_AT="+at, "PB_TEST_PUBLISH_STATE="+state)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed: %v\n%s", err, out)
			}
			work := filepath.Join(state, "sessions", "s-1", "work")
			if _, err := os.Lstat(filepath.Join(work, filepath.FromSlash(PendingPlan))); err != nil {
				t.Fatalf("the kill left nothing staged: %v", err)
			}
			ctx := context.Background()
			st, err := store.Open(ctx, state)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			c := realCard(st, work)
			if err := c.Load(ctx, true); err != nil {
				t.Fatal(err)
			}
			row, err := st.GetProposal(ctx, "s-1")
			if err != nil {
				t.Fatal(err)
			}
			want := planA
			if at == "committed" {
				want = planB
			}
			if row.Body != want {
				t.Fatalf("the row holds %q, want %q", row.Body, want)
			}
			agree(t, work, row, true, "after the load")
			if row.Status != Proposed {
				t.Errorf("the proposal is %s after the load", row.Status)
			}
		})
	}
}

// realCard is a card over a real store, its host and tracker fakes.
func realCard(st *store.Store, work string) *Card {
	lock := &sync.Mutex{}
	return New(Config{Session: "s-1", WorkDir: work, Lock: lock, Store: st,
		Host: &fakeHost{t: &testing.T{}, lock: lock, plan: true, loose: true, workspace: filepath.Dir(work)}, Tracker: &fakeTracker{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// publishChild publishes planA, then planB, killing itself with SIGKILL
// at step at of the second publish.
func publishChild(at, state string) {
	ctx := context.Background()
	st, err := store.Open(ctx, state)
	if err != nil {
		panic(err)
	}
	if err := st.PutSession(ctx, store.Session{ID: "s-1", Workspace: state, Mode: "ask"}); err != nil {
		panic(err)
	}
	os.MkdirAll(store.SessionDir(state, "s-1"), 0o700)
	c := realCard(st, filepath.Join(store.SessionDir(state, "s-1"), "work"))
	if err := c.Publish(ctx, "Fix the bug", planA, false); err != nil {
		panic(err)
	}
	publishStep = func(s string) {
		if s == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	c.Publish(ctx, "Fix the bug better", planB, false)
	panic("not killed")
}
