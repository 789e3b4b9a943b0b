package agent

import (
	"context"
	"encoding/json"

	"planbridge/internal/redact"
)

// Redacting wraps eng so that nothing it returns carries a secret of set:
// errors (a provider echoing the key in its error body), text deltas (held
// back only while they could still be a secret), the final text and tool
// call arguments. The session, its events and its store see only the
// redacted values.
func Redacting(eng Engine, set *redact.Set) Engine {
	if eng == nil || set == nil {
		return eng
	}
	return &redactingEngine{Engine: eng, set: set}
}

type redactingEngine struct {
	Engine
	set *redact.Set
}

// Unwrap returns the wrapped engine.
func (e *redactingEngine) Unwrap() Engine { return e.Engine }

func (e *redactingEngine) Stream(ctx context.Context, req Request, onText func(delta string)) (Response, error) {
	st := e.set.Stream(onText)
	resp, err := e.Engine.Stream(ctx, req, st.Write)
	st.Flush()
	resp.Text = e.set.String(resp.Text)
	for i, c := range resp.ToolCalls {
		if red := e.set.Bytes(c.Arguments); len(red) != len(c.Arguments) || string(red) != string(c.Arguments) {
			if json.Valid(red) {
				resp.ToolCalls[i].Arguments = red
			} else {
				resp.ToolCalls[i].Arguments = json.RawMessage(`{}`)
			}
		}
	}
	return resp, e.set.Error(err)
}

// ForSession implements [SessionEngine]: the wrapped engine's per-session
// state (the script's replay position) stays behind the redaction.
func (e *redactingEngine) ForSession(session, parent string) Engine {
	if se, ok := e.Engine.(SessionEngine); ok {
		return &redactingEngine{Engine: se.ForSession(session, parent), set: e.set}
	}
	return e
}
