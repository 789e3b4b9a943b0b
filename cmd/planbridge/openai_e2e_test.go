package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestOpenAIEngineThroughTheBinary: initialize selects the openai engine
// against a local server speaking the streaming protocol; a Plan turn
// streams, calls a tool in pieces, proposes; the API key reached the
// server and was written nowhere under the state directory.
func TestOpenAIEngineThroughTheBinary(t *testing.T) {
	ctx := ctxT(t)
	const key = "sk-test-never-on-disk-1234567890"
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, 401)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(v string) { fmt.Fprintf(w, "data: %s\n\n", v); w.(http.Flusher).Flush() }
		if n == 1 {
			send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Reading "}}]}`)
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`)
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.txt\"}"}}]}}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			plan := "Done.\n<proposed_plan>\n# From the fake model\n- step\n</proposed_plan>\n"
			for _, chunk := range []string{plan[:10], plan[10:30], plan[30:]} {
				c, _ := json.Marshal(chunk)
				send(`{"choices":[{"index":0,"delta":{"content":` + string(c) + `}}]}`)
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
		send(`[DONE]`)
	}))
	defer srv.Close()

	ws := gitRepo(t, map[string]string{"a.txt": "alpha\n"})
	state := t.TempDir()
	p := startServe(t, state)
	err := p.c.Call(ctx, "initialize", map[string]any{"engine": map[string]string{
		"kind": "openai", "base_url": srv.URL, "model": "fake-model", "api_key": key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan look"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	v := getApproval(t, ctx, p.c, s.ID)
	if !v.Pending || v.Title != "From the fake model" {
		t.Fatalf("approval %+v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0]["model"] != "fake-model" || bodies[0]["stream"] != true {
		t.Fatalf("requests %v", bodies)
	}
	// The second request carries the tool result of the streamed call.
	msgs, _ := json.Marshal(bodies[1]["messages"])
	if !strings.Contains(string(msgs), "alpha") {
		t.Errorf("tool result missing from the follow-up request: %s", msgs)
	}
	p.stop()
	filepath.Walk(state, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
				t.Errorf("the API key was written to %s", path)
			}
		}
		return nil
	})
}
