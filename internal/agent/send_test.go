package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// fakeLedger is the session side of a root turn: it keeps what was
// committed, logs every port call in order, "crashes" (panics) at the
// failpoint named crashAt and fails the commit named failOp with ENOSPC.
type fakeLedger struct {
	crashAt string
	failOp  string // "prompt" or "step"
	calls   []string
	kept    []Message // the committed conversation
}

type crashed struct{ at string }

func (l *fakeLedger) commit(op string, m Message) error {
	if l.failOp == op {
		return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
	}
	l.kept = append(l.kept, m)
	return nil
}
func (l *fakeLedger) Prompt(ctx context.Context, m Message) error {
	l.calls = append(l.calls, "prompt")
	return l.commit("prompt", m)
}
func (l *fakeLedger) Step(ctx context.Context, m Message) error {
	l.calls = append(l.calls, "step:"+m.Role)
	return l.commit("step", m)
}
func (l *fakeLedger) Announce()          { l.calls = append(l.calls, "announce") }
func (l *fakeLedger) Dispatched()        { l.calls = append(l.calls, "dispatched") }
func (l *fakeLedger) Retrying(err error) { l.calls = append(l.calls, "retrying") }
func (l *fakeLedger) Failpoint(name string) {
	l.calls = append(l.calls, "failpoint:"+name)
	if name == l.crashAt {
		panic(crashed{name})
	}
}

// stepEngine answers request i with replies[i] (an error or a response)
// and keeps every request's conversation.
type stepEngine struct {
	replies []any
	seen    [][]Message
}

func (e *stepEngine) Name() string { return "steps" }
func (e *stepEngine) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	e.seen = append(e.seen, append([]Message(nil), req.Messages...))
	if len(e.seen) > len(e.replies) {
		return Response{}, errors.New("no more replies")
	}
	switch r := e.replies[len(e.seen)-1].(type) {
	case error:
		return Response{}, r
	case Response:
		onText(r.Text)
		return r, nil
	}
	panic("bad reply")
}

func echoTool() *Tool {
	return &Tool{Spec: ToolSpec{Name: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}, Meta: Meta{ReadOnly: true},
		Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) { return "echoed", nil }}
}

type nopSink struct{}

func (nopSink) Text(string)                       {}
func (nopSink) ResponseDone(string)               {}
func (nopSink) ToolCall(ToolCall)                 {}
func (nopSink) ToolResult(ToolCall, bool, string) {}
func (nopSink) Blocked(ToolCall, string, string)  {}

var (
	callEcho   = Response{ToolCalls: []ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{}`)}}, Usage: Usage{InputTokens: 10, OutputTokens: 1}}
	answer     = Response{Text: "done", Usage: Usage{InputTokens: 20, OutputTokens: 2}}
	transient  = fmt.Errorf("stream cut: %w", ErrTransient)
	permanent  = errors.New("401 unauthorized")
	sentPrompt = "implement the plan"
)

func sendTurn(e Engine) *Turn {
	return &Turn{Engine: e, Tools: NewRegistry(echoTool()), Sink: nopSink{},
		Messages: []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: sentPrompt}}}
}

// prompts counts the requests' copies of the prompt.
func prompts(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == RoleUser && m.Content == sentPrompt {
			n++
		}
	}
	return n
}

// TestSendKeepsTheTurnAsItHappens: the prompt is committed before any
// request and announced after its commit; each message is committed as it
// completes, before the next request; a transient failure is retried once
// from what the turn produced, never with the prompt twice; a failed
// commit sends nothing more.
func TestSendKeepsTheTurnAsItHappens(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replies   []any
		opts      SendOptions
		failOp    string
		cancel    bool
		wantCalls []string
		wantReqs  int
		wantRetry bool
		wantErr   error
		wantUsage Usage
		wantRoles []string // of the last request's conversation
	}{
		{name: "tool loop", replies: []any{callEcho, answer},
			wantCalls: []string{"prompt", "announce", "dispatched", "step:assistant", "step:tool", "step:assistant"},
			wantReqs:  2, wantUsage: Usage{InputTokens: 30, OutputTokens: 3}},
		{name: "failed prompt commit sends nothing", replies: []any{answer}, failOp: "prompt",
			wantCalls: []string{"prompt", "announce"}, wantErr: syscall.ENOSPC},
		{name: "failed step commit ends the turn", replies: []any{callEcho, answer}, failOp: "step",
			wantCalls: []string{"prompt", "announce", "dispatched", "step:assistant"}, wantReqs: 1, wantErr: syscall.ENOSPC,
			wantUsage: Usage{InputTokens: 10, OutputTokens: 1}},
		{name: "transient failure retried once", replies: []any{transient, answer}, opts: SendOptions{RetryTransient: true},
			wantCalls: []string{"prompt", "announce", "dispatched", "retrying", "step:assistant"}, wantReqs: 2, wantRetry: true,
			wantUsage: Usage{InputTokens: 20, OutputTokens: 2}},
		{name: "retry goes on from the first attempt's steps", replies: []any{callEcho, transient, answer}, opts: SendOptions{RetryTransient: true},
			wantCalls: []string{"prompt", "announce", "dispatched", "step:assistant", "step:tool", "retrying", "step:assistant"},
			wantReqs:  3, wantRetry: true, wantUsage: Usage{InputTokens: 30, OutputTokens: 3},
			wantRoles: []string{RoleSystem, RoleUser, RoleAssistant, RoleTool}},
		{name: "only once", replies: []any{transient, transient, answer}, opts: SendOptions{RetryTransient: true},
			wantCalls: []string{"prompt", "announce", "dispatched", "retrying"}, wantReqs: 2, wantRetry: true, wantErr: ErrTransient},
		{name: "no retry unless asked (a Goal retries its own)", replies: []any{transient, answer},
			wantCalls: []string{"prompt", "announce", "dispatched"}, wantReqs: 1, wantErr: ErrTransient},
		{name: "no retry of a permanent failure", replies: []any{permanent, answer}, opts: SendOptions{RetryTransient: true},
			wantCalls: []string{"prompt", "announce", "dispatched"}, wantReqs: 1, wantErr: permanent},
		{name: "no retry after cancellation", replies: []any{transient, answer}, opts: SendOptions{RetryTransient: true}, cancel: true,
			wantCalls: []string{"prompt", "announce", "dispatched"}, wantReqs: 1, wantErr: ErrTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &stepEngine{replies: tc.replies}
			l := &fakeLedger{failOp: tc.failOp}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			res, retried, err := sendTurn(e).Send(ctx, l, tc.opts)
			if !reflect.DeepEqual(l.calls, tc.wantCalls) {
				t.Errorf("port calls %v, want %v", l.calls, tc.wantCalls)
			}
			if len(e.seen) != tc.wantReqs || retried != tc.wantRetry {
				t.Errorf("%d requests (retried %v), want %d (%v)", len(e.seen), retried, tc.wantReqs, tc.wantRetry)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			if res.Usage != tc.wantUsage {
				t.Errorf("usage %+v, want %+v", res.Usage, tc.wantUsage)
			}
			for i, req := range e.seen {
				if n := prompts(req); n != 1 {
					t.Errorf("request %d carries the prompt %d times", i+1, n)
				}
			}
			// What the turn returns is what was committed after the prompt.
			if tc.failOp == "" && len(l.kept) > 0 && !reflect.DeepEqual(l.kept[1:], res.Messages) && len(res.Messages) > 0 {
				t.Errorf("result %v differs from what was committed %v", res.Messages, l.kept[1:])
			}
			if tc.wantRoles != nil {
				var roles []string
				for _, m := range e.seen[len(e.seen)-1] {
					roles = append(roles, m.Role)
				}
				if !reflect.DeepEqual(roles, tc.wantRoles) {
					t.Errorf("the last request's conversation is %v, want %v", roles, tc.wantRoles)
				}
			}
		})
	}
}

// TestSendFailpoints: a crash at the failpoint before the prompt's commit
// leaves nothing committed and nothing sent; a crash at the one after it
// leaves the prompt committed and still nothing sent, so a restart
// continues from the stored conversation and never sends the kickoff
// again. These are the kickoff's crash points of a Goal ("goal.kickoff",
// "goal.dispatched") and of a Direct handoff ("handoff.dispatched"), as
// the session names them.
func TestSendFailpoints(t *testing.T) {
	goal := SendOptions{BeforePrompt: "goal.kickoff", Dispatched: "goal.dispatched"}
	direct := SendOptions{Dispatched: "handoff.dispatched", RetryTransient: true}
	for _, tc := range []struct {
		opts       SendOptions
		crashAt    string
		wantCalls  []string
		wantStored bool
	}{
		{goal, "goal.kickoff", []string{"failpoint:goal.kickoff"}, false},
		{goal, "goal.dispatched", []string{"failpoint:goal.kickoff", "prompt", "announce", "dispatched", "failpoint:goal.dispatched"}, true},
		{direct, "handoff.dispatched", []string{"prompt", "announce", "dispatched", "failpoint:handoff.dispatched"}, true},
		{goal, "", []string{"failpoint:goal.kickoff", "prompt", "announce", "dispatched", "failpoint:goal.dispatched", "step:assistant"}, true},
	} {
		t.Run(tc.opts.Dispatched+"/"+tc.crashAt, func(t *testing.T) {
			e := &stepEngine{replies: []any{answer}}
			l := &fakeLedger{crashAt: tc.crashAt}
			func() {
				defer func() {
					if r := recover(); r != nil {
						if c, ok := r.(crashed); !ok || c.at != tc.crashAt {
							panic(r)
						}
					}
				}()
				if _, _, err := sendTurn(e).Send(context.Background(), l, tc.opts); err != nil {
					t.Fatal(err)
				}
			}()
			if !reflect.DeepEqual(l.calls, tc.wantCalls) {
				t.Errorf("port calls %v, want %v", l.calls, tc.wantCalls)
			}
			stored := len(l.kept) > 0 && l.kept[0].Content == sentPrompt
			if stored != tc.wantStored {
				t.Errorf("prompt committed %v, want %v", stored, tc.wantStored)
			}
			wantReqs := map[bool]int{true: 1}[tc.crashAt == ""]
			if len(e.seen) != wantReqs {
				t.Errorf("%d requests sent, want %d: a crash at or before the dispatch sends nothing", len(e.seen), wantReqs)
			}
		})
	}
}

func TestSendNeedsAPrompt(t *testing.T) {
	l := &fakeLedger{}
	_, _, err := (&Turn{Engine: &stepEngine{}}).Send(context.Background(), l, SendOptions{})
	if err == nil || !strings.Contains(err.Error(), "prompt") || len(l.calls) != 0 {
		t.Fatalf("err %v, calls %v", err, l.calls)
	}
}
