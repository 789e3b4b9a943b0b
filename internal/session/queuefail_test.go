package session

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// replyEngine answers every request with text, recording the requests.
type replyEngine struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (e *replyEngine) Name() string { return "reply" }
func (e *replyEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	return agent.Response{Text: "done"}, nil
}

func (e *replyEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reqs)
}

// TestQueuedPromptWhoseCommitFailsStaysQueued: a follow-up waiting in the
// durable queue whose prompt commit fails (a full disk; the queue's own
// commits failing too or not) is not lost and not run in a loop: its turn
// ends ok:false with the error, nothing is sent, and it stays queued, in
// memory (visible in the session's count) as in the store. Once the disk
// is freed the one recovery path runs it, exactly once.
func TestQueuedPromptWhoseCommitFailsStaysQueued(t *testing.T) {
	for _, fail := range []string{store.OpPrompt, store.OpPrompt + "," + store.OpQueue} {
		t.Run(fail, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := t.TempDir()
			st, err := store.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			m1 := NewManager(Config{Store: st, Engine: &replyEngine{}})
			s1, err := m1.Create(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			id := s1.ID()
			const prompt = "go on with the follow-up"
			if _, err := st.EnqueueInput(ctx, id, store.QueuedInput{Text: prompt, Display: prompt}); err != nil {
				t.Fatal(err)
			}
			m1.Close()
			st.Close()

			st, err = store.Open(ctx, dir, store.WithFailingCommits(fail))
			if err != nil {
				t.Fatal(err)
			}
			eng := &replyEngine{}
			m2 := NewManager(Config{Store: st, Engine: eng})
			var mu sync.Mutex
			var ends []string
			m2.Subscribe(func(ev Event) {
				if ev.Kind == "turn_end" {
					mu.Lock()
					ends = append(ends, string(ev.Data))
					mu.Unlock()
				}
			})
			s2, err := m2.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := s2.Info().Queued; n != 1 {
				t.Fatalf("after the restart %d prompts are queued, want 1", n)
			}
			if _, err := s2.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, func() bool { mu.Lock(); defer mu.Unlock(); return len(ends) > 0 })
			if err := s2.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if len(ends) != 1 {
				t.Errorf("%d turns ended, want 1 (a failed prompt must not run in a loop): %v", len(ends), ends)
			}
			var end struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			json.Unmarshal([]byte(ends[0]), &end)
			mu.Unlock()
			if end.OK || !strings.Contains(end.Error, "no space left") {
				t.Errorf("turn_end %+v, want ok:false with the commit's error", end)
			}
			if n := eng.count(); n != 0 {
				t.Errorf("%d requests sent with the prompt's commit failing", n)
			}
			if n := s2.Info().Queued; n != 1 {
				t.Errorf("after the failed prompt commit %d prompts are queued in memory, want 1", n)
			}
			if q, err := st.QueuedInputs(ctx, id); err != nil || len(q) != 1 {
				t.Errorf("after the failed prompt commit the store queues %+v (%v), want the prompt", q, err)
			}
			// The process stops (a crash: a graceful Close drops what is
			// queued) and the disk is freed: the one recovery path runs
			// it, once.
			defer m2.Close()
			defer st.Close()
			st, err = store.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			eng = &replyEngine{}
			m3 := NewManager(Config{Store: st, Engine: eng})
			defer m3.Close()
			s3, err := m3.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s3.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, func() bool { return eng.count() > 0 && s3.Info().Queued == 0 })
			if err := s3.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if n := eng.count(); n != 1 {
				t.Errorf("the recovered prompt made %d requests, want 1", n)
			}
			msgs, err := st.Messages(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range msgs {
				if m.Role == agent.RoleUser && strings.Contains(m.Content, prompt) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the prompt is stored %d times, want 1", n)
			}
			if q, _ := st.QueuedInputs(ctx, id); len(q) != 0 {
				t.Errorf("still queued after it ran: %+v", q)
			}
		})
	}
}
