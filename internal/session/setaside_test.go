package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"planbridge/internal/store"
)

// TestSetAsideSessionIsNotOpened: a session whose files an interrupted
// delete set aside and could not put back (the start warns and goes on)
// is refused with where its files are, and nothing of it changes: its
// proposal stays proposed in the store (loading it without its files
// used to demote it to a draft for good) and no empty directory appears
// beside the real one. Once the files are moved back it opens with its
// card.
func TestSetAsideSessionIsNotOpened(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Store: st})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.card.Publish(ctx, "Rename", "# Rename\n\n1. Rename it.\n", false); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	m.Close()
	st.Close()

	live := store.SessionDir(dir, id)
	aside := strings.TrimSuffix(live, id) + ".deleted-" + id
	if err := os.Rename(live, aside); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m = NewManager(Config{Store: st})
	defer m.Close()
	_, err = m.Get(ctx, id)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnavailable || !strings.Contains(e.Message, aside) {
		t.Fatalf("open of a set-aside session: %v, want %s naming %s", err, CodeUnavailable, aside)
	}
	if _, err := m.Delete(ctx, id); err == nil {
		t.Fatal("a set-aside session was deleted without its files being looked at")
	}
	if p, err := st.GetProposal(ctx, id); err != nil || p.Status != ProposalProposed {
		t.Fatalf("the proposal after the refused open: %+v, %v; want it still proposed", p, err)
	}
	if list, err := m.List(ctx); err != nil || len(list) != 1 || list[0].ProposalStatus != ProposalProposed {
		t.Fatalf("the list of a set-aside session: %+v, %v; want its proposal as stored (proposed)", list, err)
	}
	if _, err := os.Lstat(live); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a directory appeared for the set-aside session: %v", err)
	}
	if err := os.Rename(aside, live); err != nil {
		t.Fatal(err)
	}
	s, err = m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Approval().Card; !c.Pending {
		t.Fatalf("after the files were put back the card is %+v, want it presented", c)
	}
}
