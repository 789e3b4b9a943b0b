package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"planbridge/internal/agent"
	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/internal/trackbind"
)

// CodeApplication is the JSON-RPC error code of every application error; the
// stable reason is in error.data.code.
const CodeApplication = -32000

// CodeRequestCancelled answers a request cancelled with $/cancelRequest.
const CodeRequestCancelled = -32800

// Options configures a [Server].
type Options struct {
	Manager *session.Manager
	Logger  *slog.Logger
	Version string
	// NewEngine builds the model engine named by initialize params.
	NewEngine func(agent.EngineConfig) (agent.Engine, error)
	// Share serves share/start|stop|links; nil answers them "unavailable".
	Share *share.Server
	// MaxFrame bounds one message body in bytes ([DefaultMaxFrame] when 0);
	// a larger frame is read through unbuffered and refused.
	MaxFrame int
	// Warnings are what the server's start could not finish, for the
	// person: initialize's result carries them ("warnings").
	Warnings []string
}

// Server serves one JSON-RPC connection.
type Server struct {
	opt  Options
	log  *slog.Logger
	conn *jsonrpc2.Conn
	// instance identifies this backend process to the client, which
	// re-renders its sessions from their logs when it changes.
	instance string

	handlers sync.WaitGroup // requests being handled

	mu       sync.Mutex // guards inflight
	inflight map[jsonrpc2.ID]context.CancelFunc
}

type handlerFunc func(ctx context.Context, s *Server, params json.RawMessage) (any, error)

// methods is the method table: one entry per JSON-RPC method.
var methods = map[string]handlerFunc{
	"initialize":                initialize,
	"shutdown":                  shutdown,
	"session/create":            sessionCreate,
	"session/open":              sessionOpen,
	"session/list":              sessionList,
	"session/delete":            sessionDelete,
	"session/submit":            sessionSubmit,
	"session/interrupt":         sessionInterrupt,
	"session/setPermissionMode": sessionSetMode,
	"plan/enter":                planEnter,
	"plan/exit":                 planExit,
	"plan/status":               planStatus,
	"approval/get":              approvalGet,
	"approval/update":           approvalUpdate,
	"approval/accept":           approvalAccept,
	"approval/feedback":         approvalFeedback,
	"approval/cancel":           approvalCancel,
	"approval/diff":             approvalDiff,
	"report/get":                reportGet,
	"report/fileDiff":           reportFileDiff,
	"approval/hide":             approvalHide,
	"approval/show":             approvalShow,
	"approval/edit":             approvalEdit,
	"approval/restore":          approvalRestore,
	"handoff/recover":           handoffRecover,
	"handoff/retry":             handoffRecover, // alias
	"implementation/resume":     handoffRecover, // alias
	"approval/park":             approvalPark,
	"approval/outcomes":         approvalOutcomes,
	"plan/parked":               planParked,
	"plan/startParked":          planStartParked,
	"handoff/savePlan":          handoffSavePlan,
	"session/queue":             sessionQueue,
	"share/start":               shareStart,
	"share/stop":                shareStop,
	"share/links":               shareLinksGet,
	"session/compact":           sessionCompact,
	"session/tracking":          sessionTracking,
	"goal/get":                  goalGet,
	"goal/start":                goalStart,
	"goal/pause":                goalPause,
	"goal/resume":               goalResume,
	"goal/budget":               goalBudget,
	"goal/edit":                 goalEdit,
	"goal/clear":                goalClear,
}

// Serve speaks JSON-RPC on r/w until the peer closes the stream or ctx ends.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opt Options) error {
	s := &Server{opt: opt, log: opt.Logger, instance: newInstanceID(), inflight: map[jsonrpc2.ID]context.CancelFunc{}}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	stream := newFrameStream(r, w, nil, opt.MaxFrame)
	// At end of input, answer the requests already read before closing.
	stream.beforeEOF = s.handlers.Wait
	s.conn = jsonrpc2.NewConn(ctx, stream, asyncHandler{&s.handlers, replier{s, stream}},
		jsonrpc2.SetLogger(slogAdapter{s.log}))
	unsub := opt.Manager.Subscribe(func(ev session.Event) {
		if err := s.conn.Notify(context.Background(), "session/event", ev); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
			s.log.Warn("notify", "err", err)
		}
	})
	defer unsub()
	opt.Manager.SetAsker(s.askPermission)
	select {
	case <-s.conn.DisconnectNotify():
	case <-ctx.Done():
		s.conn.Close()
	}
	return nil
}

func (s *Server) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, *jsonrpc2.Error) {
	if req.Method == "$/cancelRequest" {
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if req.Params != nil && json.Unmarshal(*req.Params, &p) == nil && len(p.ID) > 0 {
			s.mu.Lock()
			if cancel := s.inflight[wireID(p.ID)]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
		}
		return nil, nil
	}
	fn := methods[req.Method]
	if fn == nil {
		if req.Notif {
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %s", req.Method)}
	}
	if !req.Notif {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		s.mu.Lock()
		s.inflight[req.ID] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, req.ID)
			s.mu.Unlock()
			cancel()
		}()
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	res, err := fn(ctx, s, params)
	if err != nil {
		return nil, s.toWireError(ctx, req.Method, err)
	}
	return res, nil
}

// paramsError marks a params decoding failure.
type paramsError struct{ err error }

func (e paramsError) Error() string { return "invalid params: " + e.err.Error() }

// decode unmarshals params into a T, refusing unknown fields' wrong types.
func decode[T any](params json.RawMessage) (T, error) {
	var v T
	if len(params) == 0 || string(params) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(params, &v); err != nil {
		return v, paramsError{err}
	}
	return v, nil
}

func (s *Server) toWireError(ctx context.Context, method string, err error) *jsonrpc2.Error {
	var pe paramsError
	var ae *session.Error
	switch {
	case errors.As(err, &pe):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: pe.Error()}
	case errors.As(err, &ae):
		e := &jsonrpc2.Error{Code: CodeApplication, Message: ae.Message}
		e.SetError(map[string]string{"code": ae.Code})
		if ae.Code == session.CodeInvalidParams {
			e.Code = jsonrpc2.CodeInvalidParams
		}
		return e
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return &jsonrpc2.Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	}
	s.log.Error("request failed", "method", method, "err", err)
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
}

// AskTimeout bounds how long a permission/ask waits for the person; no
// answer is a denial (the turn goes on and the model is told).
const AskTimeout = 15 * time.Minute

// askPermission asks the client with a server→client permission/ask request.
func (s *Server) askPermission(ctx context.Context, sess string, call agent.ToolCall, reason string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	var res struct {
		Allow bool `json:"allow"`
	}
	params := map[string]any{"session": sess, "tool": call.Name, "arguments": call.Arguments, "summary": reason}
	if k := trackbind.AskKind(ctx); k != "" {
		params["kind"] = k // the call already ran: allow extends the scope, deny restores
	}
	err := s.conn.Call(ctx, "permission/ask", params, &res)
	if err != nil {
		return false, err
	}
	return res.Allow, nil
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, v ...any) { a.l.Info(fmt.Sprintf(format, v...)) }

// asyncHandler handles each request on its own goroutine so no handler
// blocks the connection (the server also calls the client), and counts
// them so end of input can wait for their answers.
type asyncHandler struct {
	wg *sync.WaitGroup
	h  jsonrpc2.Handler
}

func (a asyncHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.h.Handle(ctx, conn, req)
	}()
}

// replier handles a request with [Server.handle] and writes its answer
// itself ([frameStream.WriteResponse]): jsonrpc2's reply would marshal a
// long session/open answer three times over.
type replier struct {
	s      *Server
	stream *frameStream
}

func (r replier) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	result, err := r.s.handle(ctx, conn, req)
	if req.Notif {
		if err != nil {
			r.s.log.Warn("notification failed", "method", req.Method, "err", err)
		}
		return
	}
	if err := r.stream.WriteResponse(req.ID, result, err); err != nil {
		r.s.log.Warn("answer", "method", req.Method, "err", err)
	}
}

// newInstanceID returns a random id for one backend process.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return "i-" + hex.EncodeToString(b)
}
