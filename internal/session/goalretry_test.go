package session

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// goalFollowEngine holds the Goal's kickoff until released, fails the
// first request carrying the follow-up transiently, answers the follow-up
// after that, and holds every other request (continuations) until the
// turn is cancelled.
type goalFollowEngine struct {
	release chan struct{}
	mu      sync.Mutex
	reqs    []agent.Request
}

func (e *goalFollowEngine) Name() string { return "goal-follow" }

func (e *goalFollowEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	n := len(e.reqs)
	follow := 0
	for _, r := range e.reqs {
		if last := r.Messages[len(r.Messages)-1]; last.Role == agent.RoleUser && strings.Contains(last.Content, "FOLLOWUP") {
			follow++
		}
	}
	e.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	switch {
	case n == 1: // the kickoff
		select {
		case <-e.release:
		case <-ctx.Done():
			return agent.Response{}, ctx.Err()
		}
		return agent.Response{Text: "started"}, nil
	case last.Role == agent.RoleUser && strings.Contains(last.Content, "FOLLOWUP") && follow == 1:
		return agent.Response{}, fmt.Errorf("upstream overloaded: %w", agent.ErrTransient)
	case strings.Contains(lastUser(req.Messages), "FOLLOWUP"):
		return agent.Response{Text: "followed"}, nil
	}
	<-ctx.Done()
	return agent.Response{}, ctx.Err()
}

func lastUser(msgs []agent.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agent.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// TestGoalFollowUpRetryNeverResendsThePrompt: a prompt queued while a Goal
// runs (a share link's here) becomes a Goal turn; when its model request
// fails transiently it is retried once, as every turn is, without its
// prompt being stored or sent a second time, and still unattended.
func TestGoalFollowUpRetryNeverResendsThePrompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng := &goalFollowEngine{release: make(chan struct{})}
	m := NewManager(Config{Store: st, Engine: eng})
	defer m.Close()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GoalCommand(ctx, "tidy the repository"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { eng.mu.Lock(); defer eng.mu.Unlock(); return len(eng.reqs) == 1 })
	res, err := s.QueueGuest("FOLLOWUP please")
	if err != nil || !res.Queued {
		t.Fatalf("queue the guest's follow-up: %+v %v", res, err)
	}
	close(eng.release)
	// Kickoff, the follow-up's failed request, its retry, then a
	// continuation that holds the engine.
	waitFor(t, ctx, func() bool { eng.mu.Lock(); defer eng.mu.Unlock(); return len(eng.reqs) >= 4 })
	s.Interrupt()
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, msg := range msgs {
		if msg.Role == string(agent.RoleUser) && strings.Contains(msg.Content, "FOLLOWUP") {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("the follow-up's prompt is stored %d times, want 1", stored)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	for i, r := range eng.reqs {
		n := 0
		for _, msg := range r.Messages {
			if msg.Role == agent.RoleUser && strings.Contains(msg.Content, "FOLLOWUP") {
				n++
			}
		}
		if n > 1 {
			t.Errorf("request %d carries the follow-up %d times", i+1, n)
		}
	}
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out waiting")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
