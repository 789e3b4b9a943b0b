package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ScriptStep is one scripted model response.
type ScriptStep struct {
	Text      string `json:"text,omitempty"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	} `json:"tool_calls,omitempty"`
	// Error makes the request fail with this message; Transient marks it
	// retryable ([ErrTransient]).
	Error     string `json:"error,omitempty"`
	Transient bool   `json:"transient,omitempty"`
	// DelayMS pauses before each chunk, so tests can interrupt a stream.
	DelayMS int    `json:"delay_ms,omitempty"`
	Usage   *Usage `json:"usage,omitempty"`
	// ExpectContains / ExpectAbsent assert on the request the replay
	// answers (all message contents joined): a scripted conversation can
	// check what the model is given. A failed expectation fails the request.
	ExpectContains []string `json:"expect_contains,omitempty"`
	ExpectAbsent   []string `json:"expect_absent,omitempty"`
	// ExpectLastUserAbsent asserts on the last user message only.
	ExpectLastUserAbsent []string `json:"expect_last_user_absent,omitempty"`
}

// Script replays a scripted conversation: one step per model request, in
// order. It is the deterministic stand-in for a model in tests and the demo,
// and always labels itself as a replay. Safe for concurrent use.
type Script struct {
	path  string
	steps []ScriptStep

	mu  sync.Mutex // guards pos
	pos int

	// OnAdvance, if set, is called with the new position after each consumed
	// step, so a caller can persist the cursor across restarts.
	OnAdvance func(pos int)
}

// ChunkSize is the size of the text pieces a Script streams.
const ChunkSize = 8

// LoadScript reads a script file: a JSON array of [ScriptStep].
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	var steps []ScriptStep
	if err := json.Unmarshal(b, &steps); err != nil {
		return nil, fmt.Errorf("script %s: not a JSON list of responses: %w", path, err)
	}
	for i, st := range steps {
		for j, tc := range st.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("script %s: response %d, tool call %d has no name", path, i+1, j+1)
			}
		}
	}
	return &Script{path: path, steps: steps}, nil
}

// Name implements [Engine].
func (s *Script) Name() string { return "script (replay of " + s.path + ")" }

// Seek sets the next step to replay (used to restore a persisted cursor).
func (s *Script) Seek(pos int) {
	s.mu.Lock()
	s.pos = pos
	s.mu.Unlock()
}

// Pos is the index of the next step to replay.
func (s *Script) Pos() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}

// ErrScriptExhausted is returned when a request arrives after the last step.
var ErrScriptExhausted = errors.New("script exhausted: no scripted response left for this model request")

// Stream implements [Engine].
func (s *Script) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	s.mu.Lock()
	if s.pos >= len(s.steps) {
		s.mu.Unlock()
		return Response{}, fmt.Errorf("%w (%d responses in %s)", ErrScriptExhausted, len(s.steps), s.path)
	}
	st := s.steps[s.pos]
	s.pos++
	pos, hook := s.pos, s.OnAdvance
	s.mu.Unlock()
	if hook != nil {
		hook(pos)
	}
	if len(st.ExpectLastUserAbsent) > 0 {
		last := ""
		for _, m := range req.Messages {
			if m.Role == RoleUser {
				last = m.Content
			}
		}
		for _, bad := range st.ExpectLastUserAbsent {
			if strings.Contains(last, bad) {
				return Response{}, fmt.Errorf("script expectation failed at response %d: the last user message contains %q", pos, bad)
			}
		}
	}
	if len(st.ExpectContains)+len(st.ExpectAbsent) > 0 {
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content)
			all.WriteByte('\n')
		}
		for _, want := range st.ExpectContains {
			if !strings.Contains(all.String(), want) {
				return Response{}, fmt.Errorf("script expectation failed at response %d: the request does not contain %q", pos, want)
			}
		}
		for _, bad := range st.ExpectAbsent {
			if strings.Contains(all.String(), bad) {
				return Response{}, fmt.Errorf("script expectation failed at response %d: the request contains %q", pos, bad)
			}
		}
	}
	if st.Error != "" {
		err := errors.New(st.Error)
		if st.Transient {
			err = fmt.Errorf("%w: %s", ErrTransient, st.Error)
		}
		return Response{}, err
	}
	text := st.Text
	for len(text) > 0 {
		n := ChunkSize
		if n > len(text) {
			n = len(text)
		}
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		if st.DelayMS > 0 {
			select {
			case <-ctx.Done():
				return Response{}, fmt.Errorf("script stream: %w", ctx.Err())
			case <-time.After(time.Duration(st.DelayMS) * time.Millisecond):
			}
		}
		if err := ctx.Err(); err != nil {
			return Response{}, fmt.Errorf("script stream: %w", err)
		}
		onText(text[:n])
		text = text[n:]
	}
	resp := Response{Text: st.Text}
	for i, tc := range st.ToolCalls {
		args := tc.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: fmt.Sprintf("call_%d_%d", pos, i+1), Name: tc.Name, Arguments: args})
	}
	if st.Usage != nil {
		resp.Usage = *st.Usage
	} else {
		in := 0
		for _, m := range req.Messages {
			in += len(m.Content)
		}
		resp.Usage = Usage{InputTokens: in/4 + 1, OutputTokens: len(st.Text)/4 + 1}
	}
	return resp, nil
}
