package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// MaxLine bounds one message from the agent.
const MaxLine = 64 << 20

// Handler serves the agent's requests and notifications. For a
// notification the result is ignored. An error that is an [*Error] is sent
// with its code; any other error as an internal error.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("acp error %d: %s", e.Code, e.Message) }

// JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeResourceNotFound is ACP's code for a missing resource (a file
	// fs/read_text_file cannot find).
	CodeResourceNotFound = -32002
)

// ErrClosed is returned by calls on a closed connection.
var ErrClosed = errors.New("acp: connection closed")

// Conn is one JSON-RPC connection to an agent. Safe for concurrent use.
type Conn struct {
	w       io.Writer
	handler Handler
	ctx     context.Context
	cancel  context.CancelFunc

	wmu sync.Mutex // serialises writes of whole lines

	mu      sync.Mutex // guards the fields below
	nextID  int64
	pending map[string]chan response
	err     error // why the connection ended; set once
	done    chan struct{}
}

type response struct {
	result json.RawMessage
	err    *Error
}

type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *Error           `json:"error,omitempty"`
}

// NewConn starts reading r and returns the connection. h serves the
// agent's requests; nil answers every request with method-not-found.
func NewConn(r io.Reader, w io.Writer, h Handler) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{w: w, handler: h, ctx: ctx, cancel: cancel, pending: map[string]chan response{}, done: make(chan struct{})}
	go c.read(r)
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection; pending calls fail with [ErrClosed].
func (c *Conn) Close() { c.fail(ErrClosed) }

func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pend := c.pending
	c.pending = map[string]chan response{}
	c.mu.Unlock()
	c.cancel()
	for _, ch := range pend {
		close(ch)
	}
	close(c.done)
}

func (c *Conn) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			c.fail(fmt.Errorf("acp: the agent sent a line that is not JSON-RPC: %w", err))
			return
		}
		switch {
		case m.Method != "" && m.ID == nil:
			if c.handler != nil {
				_, _ = c.handler(c.ctx, m.Method, m.Params)
			}
		case m.Method != "":
			id := append(json.RawMessage(nil), *m.ID...)
			go c.serve(id, m.Method, m.Params)
		case m.ID != nil:
			c.deliver(*m.ID, response{result: m.Result, err: m.Error})
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	c.fail(fmt.Errorf("acp: the agent's output ended: %w", err))
}

func (c *Conn) deliver(id json.RawMessage, r response) {
	key := string(bytes.TrimSpace(id))
	c.mu.Lock()
	ch := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

func (c *Conn) serve(id json.RawMessage, method string, params json.RawMessage) {
	var res any
	err := error(&Error{Code: CodeMethodNotFound, Message: "method not found: " + method})
	if c.handler != nil {
		res, err = c.handler(c.ctx, method, params)
	}
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		out["error"] = e
	} else {
		if res == nil {
			res = json.RawMessage("null")
		}
		out["result"] = res
	}
	_ = c.write(out)
}

func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		c.fail(fmt.Errorf("acp: writing to the agent: %w", err))
		return err
	}
	return nil
}

// Call sends a request and waits for its response, decoding the result
// into result (unless nil). A cancelled ctx abandons the wait (the caller
// sends its own cancellation, e.g. session/cancel).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.pending[strconv.FormatInt(id, 10)] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w: %v", method, ErrClosed, c.Err())
		}
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if result != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("%s: bad result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, strconv.FormatInt(id, 10))
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}
