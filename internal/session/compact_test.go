package session

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
)

// TestCompact: /compact replaces the context with one summary message on
// a new segment, in one commit (OpSegment), and says so (a notice, then
// compacted); a reopened session continues from it. When that commit
// fails (a full disk) nothing changes, in memory as in the store, and the
// person is told: the context, its segment and the next index stay.
func TestCompact(t *testing.T) {
	for _, c := range []struct {
		name string
		fail string // store operations that fail
		ok   bool
	}{
		{"committed", "", true},
		{"segment commit fails", store.OpSegment, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := t.TempDir()
			st, err := store.Open(ctx, dir, store.WithFailingCommits(c.fail))
			if err != nil {
				t.Fatal(err)
			}
			eng := &replyEngine{}
			m := NewManager(Config{Store: st, Engine: eng})
			s, err := m.Create(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Submit(ctx, "hello"); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(s.tr.Messages()); n != 2 {
				t.Fatalf("%d messages before compacting", n)
			}
			var mu sync.Mutex
			var kinds, texts []string
			end := make(chan struct{}, 1) // compacted, or the failure's error
			m.Subscribe(func(ev Event) {
				mu.Lock()
				if ev.Kind != "status" { // the turn before may still be announcing its end
					kinds, texts = append(kinds, ev.Kind), append(texts, string(ev.Data))
				}
				mu.Unlock()
				if ev.Kind == "compacted" || ev.Kind == "error" {
					end <- struct{}{}
				}
			})
			if err := s.Compact(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-end:
			case <-ctx.Done():
				t.Fatal("no compacted or error event")
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got := strings.Join(kinds, " ")
			all := strings.Join(texts, "\n")
			mu.Unlock()
			if eng.count() != 2 || eng.reqs[1].Messages[0].Content != handoff.CompactPrompt || !strings.Contains(eng.reqs[1].Messages[1].Content, "hello") {
				t.Fatalf("summary request %+v", eng.reqs)
			}
			msgs := s.tr.Messages()
			if c.ok {
				if got != "notice compacted" || !strings.Contains(all, "Compacting the conversation...") {
					t.Errorf("events %s\n%s", got, all)
				}
				var d struct {
					Segment int64
					Reason  string
					Chars   int
				}
				for _, x := range texts {
					if json.Unmarshal([]byte(x), &d) == nil && d.Reason != "" {
						break
					}
				}
				if d.Segment != 1 || d.Reason != "requested" || d.Chars != len(msgs[0].Content) {
					t.Errorf("compacted %+v", d)
				}
				if len(msgs) != 1 || !strings.HasPrefix(msgs[0].Content, "Summary of the conversation so far") || !strings.Contains(msgs[0].Content, "done") {
					t.Errorf("context after %+v", msgs)
				}
			} else {
				if got != "notice error" || !strings.Contains(all, "compaction failed: ") || !strings.Contains(all, "no space left") {
					t.Errorf("events %s\n%s", got, all)
				}
				if len(msgs) != 2 || msgs[0].Content != "hello" {
					t.Errorf("context after a failed commit %+v", msgs)
				}
			}
			wantSeg, wantNext, wantMsgs := int64(0), int64(2), 2
			if c.ok {
				wantSeg, wantNext, wantMsgs = 1, 3, 1
			}
			if seg := s.rowSnapshot().Segment; seg != wantSeg || s.tr.Next() != wantNext {
				t.Errorf("segment %d next %d, want %d %d", seg, s.tr.Next(), wantSeg, wantNext)
			}
			// What the store holds is what a restart continues from.
			m.Close()
			m2 := NewManager(Config{Store: st, Engine: eng})
			defer m2.Close()
			s2, err := m2.Get(ctx, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			if seg := s2.rowSnapshot().Segment; seg != wantSeg || s2.tr.Next() != wantNext || len(s2.tr.Messages()) != wantMsgs {
				t.Errorf("reopened: segment %d next %d, %d messages", seg, s2.tr.Next(), len(s2.tr.Messages()))
			}
			st.Close()
		})
	}
}
