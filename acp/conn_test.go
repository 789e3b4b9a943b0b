package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// pipeAgent is the agent's side of a Conn: what the client writes, and a
// writer for what the agent says.
type pipeAgent struct {
	fromClient *io.PipeReader
	toClient   *io.PipeWriter
}

func newPair(t *testing.T, h Handler) (*Conn, pipeAgent) {
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	c := NewConn(cr, cw, h)
	t.Cleanup(func() { c.Close(); aw.Close(); ar.Close() })
	return c, pipeAgent{fromClient: ar, toClient: aw}
}

func readLine(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			t.Fatal(err)
		}
		if one[0] == '\n' {
			break
		}
		b = append(b, one[0])
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// TestRequestWithClientsIDIsARequest: while the client's call 1 is
// pending, the agent sends a request with id 1 and one with id "1"; both
// are served as requests (answered with their own ids) and the call still
// gets its own response.
func TestRequestWithClientsIDIsARequest(t *testing.T) {
	served := make(chan string, 2)
	c, a := newPair(t, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		served <- method
		return map[string]string{"ok": method}, nil
	})
	done := make(chan error, 1)
	var res struct{ V int }
	go func() { done <- c.Call(context.Background(), "session/prompt", map[string]any{}, &res) }()
	call := readLine(t, a.fromClient)
	if call["id"] != float64(1) {
		t.Fatalf("first call id %v", call["id"])
	}
	io.WriteString(a.toClient, `{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{}}`+"\n")
	io.WriteString(a.toClient, `{"jsonrpc":"2.0","id":"1","method":"session/request_permission","params":{}}`+"\n")
	got := map[any]bool{}
	for i := 0; i < 2; i++ {
		m := readLine(t, a.fromClient)
		got[m["id"]] = true
		if m["result"] == nil {
			t.Errorf("reply %v", m)
		}
	}
	if !got[float64(1)] || !got["1"] {
		t.Errorf("replies for ids %v", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the call ended on a request: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	io.WriteString(a.toClient, `{"jsonrpc":"2.0","id":1,"result":{"V":7}}`+"\n")
	if err := <-done; err != nil || res.V != 7 {
		t.Fatalf("call: %v %+v", err, res)
	}
}

// TestGarbageEndsTheConnection: a line that is not JSON ends the
// connection and fails pending calls with ErrClosed, never a panic.
func TestGarbageEndsTheConnection(t *testing.T) {
	for _, line := range []string{"not json", `{"id":`, "\x00\xff"} {
		c, a := newPair(t, nil)
		done := make(chan error, 1)
		go func() { done <- c.Call(context.Background(), "initialize", nil, nil) }()
		readLine(t, a.fromClient)
		io.WriteString(a.toClient, line+"\n")
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("%q: call ended with %v", line, err)
		}
		if err := c.Err(); err == nil || !strings.Contains(err.Error(), "not JSON-RPC") {
			t.Errorf("%q: %v", line, err)
		}
		if err := c.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("call after the end: %v", err)
		}
	}
}

// TestErrorResponseAndUnknownMethod: an error response reaches the caller
// as *Error; a request with no handler is answered method-not-found.
func TestErrorResponseAndUnknownMethod(t *testing.T) {
	c, a := newPair(t, nil)
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "session/new", nil, nil) }()
	readLine(t, a.fromClient)
	io.WriteString(a.toClient, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}`+"\n")
	var e *Error
	if err := <-done; !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("%v", err)
	}
	io.WriteString(a.toClient, `{"jsonrpc":"2.0","id":"x","method":"terminal/create","params":{}}`+"\n")
	m := readLine(t, a.fromClient)
	if m["id"] != "x" || m["error"].(map[string]any)["code"] != float64(CodeMethodNotFound) {
		t.Errorf("%v", m)
	}
}

func TestPick(t *testing.T) {
	opts := []PermissionOption{{OptionID: "a", Kind: AllowAlways}, {OptionID: "r", Kind: RejectOnce}}
	if id, ok := Pick(opts, AllowOnce); ok {
		t.Errorf("allow fell back to allow_always (%q): the agent would stop asking", id)
	}
	if id, ok := Pick(opts, RejectOnce); !ok || id != "r" {
		t.Errorf("reject: %q", id)
	}
	codex := []PermissionOption{{OptionID: "approved", Kind: AllowOnce}, {OptionID: "abort", Kind: RejectOnce}, {OptionID: "denied", Kind: RejectOnce}}
	if id, _ := Pick(codex, RejectOnce); id != "denied" {
		t.Errorf("reject picked %q, which ends Codex's turn", id)
	}
	if id, _ := Pick(codex[:2], RejectOnce); id != "abort" {
		t.Errorf("the only reject: %q", id)
	}
	if _, ok := Pick(opts[:1], RejectOnce); ok {
		t.Error("a reject picked an allow option")
	}
}
