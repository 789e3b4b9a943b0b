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
//
// The replay position belongs to a session, as a conversation does: each
// session starts the script from its first step ([Script.ForSession]); a
// Worktree fork continues from the position its parent had when the fork
// first asks. A step is consumed when its request starts streaming, so a
// request cancelled mid-stream does not replay that step to the next
// request, while a request whose context is already done consumes nothing.
// Requests not tied to a session ([Script.Stream]) share the position of
// the session "".
type Script struct {
	path  string
	steps []ScriptStep

	// Cursors, if set, persists positions across restarts. It is called
	// with mu held, so saves reach it in the order the steps were consumed.
	Cursors CursorStore

	mu      sync.Mutex // guards cursors
	cursors map[string]int
}

// CursorStore keeps script positions per session. LoadCursor reports
// whether a position was stored for session; an error means the position
// could not be read (never "none stored"), and a SaveCursor error means the
// new position is not kept: either fails the request, with the position
// unchanged, rather than replay a step the session already had.
type CursorStore interface {
	LoadCursor(session string) (pos int, ok bool, err error)
	SaveCursor(session string, pos int) error
}

// SessionEngine is an [Engine] that keeps state per session, such as the
// script's replay position. ForSession returns the engine the requests of
// session use; parent is the session it was forked from ("" for none),
// whose state a fork starts from.
type SessionEngine interface {
	Engine
	ForSession(session, parent string) Engine
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
	return &Script{path: path, steps: steps, cursors: map[string]int{}}, nil
}

// Name implements [Engine].
func (s *Script) Name() string { return "script (replay of " + s.path + ")" }

// Path is the script file.
func (s *Script) Path() string { return s.path }

// ForSession implements [SessionEngine].
func (s *Script) ForSession(session, parent string) Engine {
	return &scriptSession{s: s, session: session, parent: parent}
}

// Pos is the index of the next step session replays.
// A position that cannot be read counts as 0 here.
func (s *Script) Pos(session string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos, _ := s.cursorLocked(session, "")
	return pos
}

// cursorLocked returns session's position, loading or inheriting it on
// first use (under s.mu). A position that cannot be loaded is an error and
// is not remembered: the next request asks the store again.
func (s *Script) cursorLocked(session, parent string) (int, error) {
	if pos, ok := s.cursors[session]; ok {
		return pos, nil
	}
	pos := 0
	if s.Cursors != nil {
		n, ok, err := s.Cursors.LoadCursor(session)
		if err != nil {
			return 0, fmt.Errorf("script: read the replay position of session %s: %w", session, err)
		}
		if ok && n >= 0 {
			s.cursors[session] = n
			return n, nil
		}
	}
	if parent != "" && parent != session {
		var err error
		if pos, err = s.cursorLocked(parent, ""); err != nil {
			return 0, err
		}
	}
	s.cursors[session] = pos
	return pos, nil
}

// next consumes session's next step; ok is false when none is left. A
// position that cannot be loaded or saved fails the request and consumes
// nothing.
func (s *Script) next(session, parent string) (st ScriptStep, pos int, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos, err = s.cursorLocked(session, parent); err != nil {
		return ScriptStep{}, 0, false, err
	}
	if pos >= len(s.steps) {
		return ScriptStep{}, pos, false, nil
	}
	st = s.steps[pos]
	if s.Cursors != nil {
		if err := s.Cursors.SaveCursor(session, pos+1); err != nil {
			return ScriptStep{}, pos, false, fmt.Errorf("script: save the replay position of session %s: %w", session, err)
		}
	}
	pos++
	s.cursors[session] = pos
	return st, pos, true, nil
}

// scriptSession is the view of a [Script] one session's requests use.
type scriptSession struct {
	s               *Script
	session, parent string
}

func (v *scriptSession) Name() string { return v.s.Name() }

func (v *scriptSession) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	return v.s.stream(ctx, v.session, v.parent, req, onText)
}

// ErrScriptExhausted is returned when a request arrives after the last step.
var ErrScriptExhausted = errors.New("script exhausted: no scripted response left for this model request")

// Stream implements [Engine] for requests tied to no session.
func (s *Script) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	return s.stream(ctx, "", "", req, onText)
}

func (s *Script) stream(ctx context.Context, session, parent string, req Request, onText func(string)) (Response, error) {
	if err := ctx.Err(); err != nil {
		// Never answered: the step stays for the next request.
		return Response{}, fmt.Errorf("script stream: %w", err)
	}
	st, pos, ok, err := s.next(session, parent)
	if err != nil {
		return Response{}, err
	}
	if !ok {
		return Response{}, fmt.Errorf("%w (%d responses in %s)", ErrScriptExhausted, len(s.steps), s.path)
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
