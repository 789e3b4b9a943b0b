package review

import (
	"context"
	"encoding/json"
	"fmt"
)

// A SessionTool is a tool bound to a [Tracker]'s state, for the session
// to offer the model as a session-only tool: its name, description, JSON
// Schema parameters and what a call does (an error is the model's to
// read; nothing is changed by a rejected call).
type SessionTool struct {
	Name, Description string
	Parameters        json.RawMessage
	Run               func(ctx context.Context, args json.RawMessage) (string, error)
}

// Tools are the tracker's tools: todo_write ([Tracker.WriteTodos], echoed
// with [RenderTodos]) and update_plan_step ([Tracker.UpdateStep]).
func (t *Tracker) Tools() []SessionTool {
	return []SessionTool{
		{
			Name: "todo_write", Description: "Replace your whole todo list (at most 40 items, one in_progress). An empty list clears it.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["items"]}`),
			Run: func(ctx context.Context, args json.RawMessage) (string, error) {
				var a struct {
					Items []TodoItem `json:"items"`
				}
				if err := json.Unmarshal(args, &a); err != nil {
					return "", fmt.Errorf("todo_write: invalid arguments: %w", err)
				}
				items, err := t.WriteTodos(ctx, a.Items)
				if err != nil {
					return "", err
				}
				return RenderTodos(items), nil
			},
		},
		{
			Name: "update_plan_step", Description: "Set the status of a step of the accepted plan (pending, in_progress, completed, blocked, skipped).",
			Parameters: json.RawMessage(`{"type":"object","properties":{"step":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed","blocked","skipped"]}},"required":["step","status"]}`),
			Run: func(ctx context.Context, args json.RawMessage) (string, error) {
				var a struct{ Step, Status string }
				if err := json.Unmarshal(args, &a); err != nil {
					return "", fmt.Errorf("update_plan_step: invalid arguments: %w", err)
				}
				p, err := t.UpdateStep(ctx, a.Step, a.Status)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%d of %d steps finished.", p.Done(), len(p.Steps)), nil
			},
		},
	}
}
