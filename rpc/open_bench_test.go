package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"planbridge/internal/session"
	"planbridge/internal/store"
)

// openLog stores a session whose log is what a working session leaves: turns
// of model steps, each a run of text deltas (as the 5 ms groups store them),
// a tool call and its result. It returns the store's directory and the
// session id; the log holds about turns*steps*chars characters of text.
func openLog(b *testing.B, turns, steps, chars, groups int) (dir, id string) {
	ctx := context.Background()
	dir = b.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	m := session.NewManager(session.Config{Store: st})
	sess, err := m.Create(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	id = sess.Info().ID
	m.Close()
	var evs []store.Event
	seq, err := st.LastSeq(ctx, id) // Create's own events come first
	if err != nil {
		b.Fatal(err)
	}
	add := func(kind string, data any) {
		raw, err := json.Marshal(data)
		if err != nil {
			b.Fatal(err)
		}
		seq++
		evs = append(evs, store.Event{Seq: seq, Kind: kind, Data: raw, Time: time.Now()})
	}
	line := strings.Repeat("x", 79) + "\n"
	text := strings.Repeat(line, chars/len(line)+1)[:chars]
	for t := 1; t <= turns; t++ {
		add("user", map[string]string{"text": fmt.Sprintf("turn %d", t), "display": fmt.Sprintf("turn %d", t)})
		add("turn_start", map[string]any{"turn": t, "plan": false})
		for s := 0; s < steps; s++ {
			for g := 0; g < groups; g++ {
				add("text", map[string]string{"delta": text[g*chars/groups : (g+1)*chars/groups]})
			}
			callID := fmt.Sprintf("call-%d-%d", t, s)
			add("tool_call", map[string]any{"id": callID, "name": "read_file", "arguments": map[string]string{"path": "hello.txt"}})
			add("tool_result", map[string]any{"id": callID, "name": "read_file", "ok": true, "output": "hello\n"})
		}
		add("turn_end", map[string]any{"turn": t, "ok": true})
	}
	st2, err := store.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st2.Close()
	if err := st2.AppendEvents(ctx, id, evs); err != nil {
		b.Fatal(err)
	}
	return dir, id
}

// benchOpen measures session/open of a stored log through the JSON-RPC
// adapter and its framing, from the request to the last byte of the answer.
func benchOpen(b *testing.B, turns, steps, chars, groups int, params string) {
	dir, id := openLog(b, turns, steps, chars, groups)
	ctx := context.Background()
	st, err := store.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	mgr := session.NewManager(session.Config{Store: st})
	defer mgr.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go Serve(ctx, inR, outW, Options{Manager: mgr})
	defer inW.Close()
	r := bufio.NewReaderSize(outR, 1<<16)
	call := func(n int) int {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/open","params":{"session":%q%s}}`, n, id, params)
		fmt.Fprintf(inW, "Content-Length: %d\r\n\r\n%s", len(body), body)
		for {
			var length int
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fmt.Sscanf(line, "Content-Length: %d", &length); err != nil {
				b.Fatalf("header %q: %v", line, err)
			}
			r.ReadString('\n')
			msg := make([]byte, length)
			if _, err := io.ReadFull(r, msg); err != nil {
				b.Fatal(err)
			}
			if strings.Contains(string(msg[:min(len(msg), 200)]), `"error"`) {
				b.Fatalf("session/open failed: %s", msg)
			}
			if strings.Contains(string(msg[:min(len(msg), 64)]), `"id"`) {
				return length
			}
		}
	}
	size := call(0) // the session is loaded on its first request
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(i + 1)
	}
}

// BenchmarkSessionOpen1MiB: a log of 16 turns of 32 tool steps with 2 KiB
// of text each (1 MiB), stored as 4 groups a step, opened whole with runs
// of text coalesced, as Emacs asks for it.
func BenchmarkSessionOpen1MiB(b *testing.B) {
	benchOpen(b, 16, 32, 2048, 4, `,"coalesce_text":true`)
}

// BenchmarkSessionOpen1MiBRaw: the same log without coalescing (old clients).
func BenchmarkSessionOpen1MiBRaw(b *testing.B) {
	benchOpen(b, 16, 32, 2048, 4, ``)
}
