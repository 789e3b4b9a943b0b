package agent

import (
	"context"
	"encoding/json"

	"planbridge/internal/redact"
)

// turnEngine finds a [TurnEngine] under eng's wrappers. Under
// [Redacting] the turn runs with a sink that redacts what the agent says
// (text, tool arguments and output, refusal reasons) and its messages and
// error are redacted too: an agent may echo the key it was given in its
// environment.
func turnEngine(eng Engine) (func(context.Context, *Turn) (TurnResult, error), bool) {
	switch e := eng.(type) {
	case TurnEngine:
		return e.RunTurn, true
	case *redactingEngine:
		inner, ok := turnEngine(e.Engine)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context, t *Turn) (TurnResult, error) {
			tt := *t
			rs := &redactingSink{Sink: t.Sink, set: e.set}
			rs.stream = e.set.Stream(t.Sink.Text)
			tt.Sink = rs
			res, err := inner(ctx, &tt)
			for i := range res.Messages {
				res.Messages[i].Content = e.set.String(res.Messages[i].Content)
			}
			return res, e.set.Error(err)
		}, true
	}
	return nil, false
}

// redactingSink redacts everything a whole-turn engine reports.
type redactingSink struct {
	Sink
	set    *redact.Set
	stream *redact.Stream
}

func (r *redactingSink) Text(d string) { r.stream.Write(d) }

func (r *redactingSink) ResponseDone(text string) {
	r.stream.Flush()
	r.stream = r.set.Stream(r.Sink.Text)
	r.Sink.ResponseDone(r.set.String(text))
}

func (r *redactingSink) call(c ToolCall) ToolCall {
	if b := r.set.Bytes(c.Arguments); string(b) != string(c.Arguments) {
		if json.Valid(b) {
			c.Arguments = b
		} else {
			c.Arguments = json.RawMessage(`{}`)
		}
	}
	return c
}

func (r *redactingSink) ToolCall(c ToolCall) { r.Sink.ToolCall(r.call(c)) }
func (r *redactingSink) ToolResult(c ToolCall, ok bool, out string) {
	r.Sink.ToolResult(r.call(c), ok, r.set.String(out))
}
func (r *redactingSink) Blocked(c ToolCall, code, reason string) {
	r.Sink.Blocked(r.call(c), code, r.set.String(reason))
}
