package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"planbridge/rpc"
)

// TestOrdinaryTurnRetriesTransientOnce: an ordinary turn whose model
// request fails with a 5xx is retried once, without sending the prompt
// twice; a second failure in a row ends the turn with the error.
func TestOrdinaryTurnRetriesTransientOnce(t *testing.T) {
	ctx := ctxT(t)
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n != 2 { // requests 1, 3 and 4 fail
			http.Error(w, `{"error":{"message":"upstream overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, v := range []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello there."}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`} {
			fmt.Fprintf(w, "data: %s\n\n", v)
		}
	}))
	defer srv.Close()
	p := startServe(t, t.TempDir())
	if err := p.c.Call(ctx, "initialize", map[string]any{"engine": map[string]string{
		"kind": "openai", "base_url": srv.URL, "model": "fake-model", "api_key": "k"}}, nil); err != nil {
		t.Fatal(err)
	}
	s := createSession(t, ctx, p.c, t.TempDir())
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "say hello"}, nil); err != nil {
		t.Fatal(err)
	}
	var ends []string
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		if e.Kind == "turn_end" {
			ends = append(ends, string(e.Data))
		}
		return len(ends) == 1 && strings.Contains(string(e.Data), `"ok":true`)
	}); err != nil {
		t.Fatalf("first turn: %v (ends %v)", err, ends)
	}
	mu.Lock()
	if len(bodies) != 2 || strings.Count(bodies[1], "say hello") != 1 {
		t.Fatalf("requests after one transient failure: %d, second %s", len(bodies), bodies[len(bodies)-1])
	}
	mu.Unlock()
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "again"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "turn_end" && strings.Contains(string(e.Data), "overloaded")
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 4 {
		t.Fatalf("%d requests, want 4 (one retry per turn, never more)", len(bodies))
	}
	var last struct {
		Messages []struct{ Role, Content string }
	}
	json.Unmarshal([]byte(bodies[3]), &last)
	users := 0
	for _, m := range last.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "again") {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("the retried request carries the prompt %d times: %s", users, bodies[3])
	}
	notices := 0
	for _, e := range p.c.Events() {
		if e.Kind == "notice" && strings.Contains(string(e.Data), "retrying once") {
			notices++
		}
	}
	if notices != 2 {
		t.Errorf("%d retry notices, want 2", notices)
	}
}
