package rpc

import (
	"context"
	"io"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Refuse answers every request that arrives on r within wait with one
// application error (data.code = code, message msg), then returns. A server
// that cannot start (its state directory is locked or damaged) uses it so
// the client shows why, not only that the process died.
func Refuse(ctx context.Context, r io.Reader, w io.Writer, code, msg string, wait time.Duration) {
	answered := make(chan struct{}, 1)
	conn := jsonrpc2.NewConn(ctx, newFrameStream(r, w, nil, 0), refuser{code, msg, answered})
	defer conn.Close()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-answered:
	case <-conn.DisconnectNotify():
	case <-t.C:
	}
}

type refuser struct {
	code, msg string
	answered  chan struct{}
}

func (f refuser) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		return
	}
	e := &jsonrpc2.Error{Code: CodeApplication, Message: f.msg}
	e.SetError(map[string]string{"code": f.code})
	conn.ReplyWithError(ctx, req.ID, e) // written before it returns
	select {
	case f.answered <- struct{}{}:
	default:
	}
}
