package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// Client is a minimal JSON-RPC client for planbridge, used by the demo and
// by tests that drive the real binary. Safe for concurrent use.
type Client struct {
	conn *jsonrpc2.Conn

	mu     sync.Mutex // guards events, waiters, onAsk
	events []Event
	wake   chan struct{}
	onAsk  func(params json.RawMessage) any
}

// Event is a session/event notification as a client sees it.
type Event struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	Data    json.RawMessage `json:"data"`
}

// NewClient speaks JSON-RPC with Content-Length framing over r/w.
func NewClient(ctx context.Context, r io.Reader, w io.WriteCloser) *Client {
	c := &Client{wake: make(chan struct{})}
	stream := jsonrpc2.NewBufferedStream(rwc{r, w}, jsonrpc2.VSCodeObjectCodec{})
	// Synchronous handler: notifications must be seen in the order they were sent.
	c.conn = jsonrpc2.NewConn(ctx, stream, jsonrpc2.HandlerWithError(c.handle))
	return c
}

type rwc struct {
	io.Reader
	io.WriteCloser
}

func (c *Client) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	switch req.Method {
	case "session/event":
		var ev Event
		if err := json.Unmarshal(params, &ev); err == nil {
			c.mu.Lock()
			c.events = append(c.events, ev)
			close(c.wake)
			c.wake = make(chan struct{})
			c.mu.Unlock()
		}
		return nil, nil
	case "permission/ask":
		c.mu.Lock()
		fn := c.onAsk
		c.mu.Unlock()
		if fn == nil {
			return map[string]bool{"allow": false}, nil
		}
		return fn(params), nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "client does not handle " + req.Method}
}

// OnAsk sets the answer to permission/ask requests (default: deny).
func (c *Client) OnAsk(fn func(params json.RawMessage) any) {
	c.mu.Lock()
	c.onAsk = fn
	c.mu.Unlock()
}

// Call sends a request and decodes its result into result (may be nil).
// A call its context ended names its method, so a stalled request says
// which one it was.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	err := c.conn.Call(ctx, method, params, result)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%s: no answer before the context ended: %w", method, err)
	}
	return err
}

// Events returns a copy of the notifications received so far.
func (c *Client) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// WaitEvent blocks until an event satisfying pred has arrived (checking
// those already received first) and returns it.
func (c *Client) WaitEvent(ctx context.Context, pred func(Event) bool) (Event, error) {
	seen := 0
	for {
		c.mu.Lock()
		evs, wake := c.events, c.wake
		c.mu.Unlock()
		for ; seen < len(evs); seen++ {
			if pred(evs[seen]) {
				return evs[seen], nil
			}
		}
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-wake:
		}
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
