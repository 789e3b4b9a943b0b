package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestShareRooms(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSession(ctx, Session{ID: "s1", Workspace: "/w", Mode: "ask"}); err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	links := []ShareLink{{Hash: "aa", Tier: "view", ExpiresAt: exp}, {Hash: "bb", Tier: "owner", ExpiresAt: exp, Inherited: true}}
	if err := s.AddShareLinks(ctx, ShareRoom{ID: "r1", SessionID: "s1"}, links); err != nil {
		t.Fatal(err)
	}
	// Adding to an existing room keeps it and its links.
	if err := s.AddShareLinks(ctx, ShareRoom{ID: "r1", SessionID: "s1"}, []ShareLink{{Hash: "cc", Tier: "full", ExpiresAt: exp}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		id := fmt.Sprintf("e%d", i)
		if err := s.AddShareLinks(ctx, ShareRoom{ID: id, SessionID: "s1"}, links[:1]); err != nil {
			t.Fatal(err)
		}
		if err := s.EndShareRoom(ctx, id, ShareEnding{Reason: "stopped", Message: "m", KeepLinks: i == 4, ContinueRoom: "r1", ContinueSession: "s1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndShareRoom(ctx, "nope", ShareEnding{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ending a missing room: %v", err)
	}
	rooms, err := s.ShareRooms(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rooms) != 3 || rooms[0].ID != "r1" || rooms[0].Ended || rooms[1].ID != "e3" || rooms[2].ID != "e4" {
		t.Fatalf("rooms %+v", rooms)
	}
	r := rooms[0]
	if len(r.Links) != 3 || r.Links[0].Hash != "aa" || !r.Links[0].ExpiresAt.Equal(exp) || !r.Links[1].Inherited || r.Links[2].Tier != "full" {
		t.Fatalf("live room links %+v", r.Links)
	}
	if e := rooms[1]; !e.Ended || e.Reason != "stopped" || e.ContinueRoom != "r1" || e.ContinueSession != "s1" || len(e.Links) != 0 || e.EndedAt.IsZero() {
		t.Fatalf("ended room %+v", e)
	}
	if e := rooms[2]; len(e.Links) != 1 {
		t.Fatalf("ended room kept no links: %+v", e)
	}
	var n int
	s.db.QueryRow(`SELECT COUNT(*) FROM share_rooms`).Scan(&n)
	if n != 3 {
		t.Fatalf("%d rooms left after pruning, want 3", n)
	}
}
