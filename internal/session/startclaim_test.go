package session

import (
	"context"
	"strings"
	"testing"
)

// TestParkedStartClaimsTheSession: from its checks to its hand-over a
// parked plan's start holds the session, so a second start in that
// moment is refused as busy starting (not told a retry waits); the claim
// ends with the start, and a refused start never releases another's.
func TestParkedStartClaimsTheSession(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := s.hand.Starting("p1")
	if err := first.Claim(); err != nil {
		t.Fatalf("the first start's checks: %v", err)
	}
	second := s.hand.Starting("p1")
	err = second.Claim()
	if err == nil || !strings.Contains(err.Error(), "busy starting") {
		t.Fatalf("a second start while the first one runs: %v", err)
	}
	second.Release() // refused: it claimed nothing
	if err := s.hand.Starting("p1").Claim(); err == nil {
		t.Fatal("a refused start released the first one's claim")
	}
	first.Release()
	third := s.hand.Starting("p1")
	if err := third.Claim(); err != nil {
		t.Fatalf("after the first start ended: %v", err)
	}
	third.Release()
}
