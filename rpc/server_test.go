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

func TestCancelRequestStopsHandler(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	methods["test/block"] = func(ctx context.Context, s *Server, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}
	defer delete(methods, "test/block")

	st, err := store.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mgr := session.NewManager(session.Config{Store: st})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go Serve(context.Background(), inR, outW, Options{Manager: mgr})
	send := func(body string) { fmt.Fprintf(inW, "Content-Length: %d\r\n\r\n%s", len(body), body) }
	send(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`)
	<-started
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	select {
	case err := <-stopped:
		if err != context.Canceled {
			t.Fatalf("handler ctx err %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("$/cancelRequest did not cancel the handler")
	}
	r := bufio.NewReader(outR)
	var length int
	line, _ := r.ReadString('\n')
	fmt.Sscanf(line, "Content-Length: %d", &length)
	r.ReadString('\n')
	body := make([]byte, length)
	io.ReadFull(r, body)
	if !strings.Contains(string(body), "-32800") {
		t.Fatalf("cancelled request answered %s, want code -32800", body)
	}
	inW.Close()
}
