package session

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"planbridge/internal/store"
)

// TestFailedAcceptanceCommitMovesNothing: the one acceptance commit an
// acceptance and a parked plan's start share fails (a full disk) and
// leaves the session as it was, in memory too: the accepted card stays
// pending under the same attempt (so parking it still works), no plan is
// tracked, Plan is not left, the proposal keeps its status; the parked
// plan is not started and a start that failed releases its claim.
func TestFailedAcceptanceCommitMovesNothing(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.WithFailingCommits(store.OpAcceptance))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st})
	defer m.Close()
	ws := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	s, err := m.Create(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.card.Publish(ctx, "Rename the greeting", "# Rename the greeting\n\n1. Rename it.\n2. Test it.\n", false); err != nil {
		t.Fatal(err)
	}
	attempt := s.Approval().Card.Attempt
	if attempt == "" {
		t.Fatal("no card is presented")
	}
	unchanged := func(what string) {
		t.Helper()
		in := s.Info()
		if !in.Plan || in.ProposalStatus != ProposalProposed && in.ProposalStatus != ProposalParked || s.TrackedPlan() != nil || in.Busy {
			t.Errorf("%s: the session moved: %+v, tracked %+v", what, in, s.TrackedPlan())
		}
	}
	if _, err := s.Accept(ctx, attempt, ""); err == nil || !strings.Contains(err.Error(), syscall.ENOSPC.Error()) {
		t.Fatalf("accept over a full disk: %v", err)
	}
	unchanged("accept")
	if c := s.Approval().Card; !c.Pending || c.Attempt != attempt {
		t.Fatalf("after the failed acceptance the card is %+v, want pending under %s", c, attempt)
	}
	parked, err := s.Park(ctx, attempt)
	if err != nil {
		t.Fatalf("parking the card the failed acceptance left pending: %v", err)
	}
	for i := 0; i < 2; i++ { // the claim of the failed start was released
		if _, err := m.StartParked(ctx, parked.ID, "", ""); err == nil || !strings.Contains(err.Error(), syscall.ENOSPC.Error()) {
			t.Fatalf("start %d over a full disk: %v", i, err)
		}
	}
	unchanged("start")
	if ps, err := m.Parked(ctx, s.ID(), false); err != nil || len(ps) != 1 || ps[0].ID != parked.ID {
		t.Fatalf("the parked plan after the failed starts: %+v %v", ps, err)
	}
}
