package event

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MaxViewOutput bounds the tool output a [ToolResult] carries: the model
// gets all of it, the view this much.
const MaxViewOutput = 16 << 10

// NewToolCall is the event of a tool call: its arguments as the model sent
// them when they are one JSON value, else {}.
func NewToolCall(id, name string, args json.RawMessage) ToolCall {
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage(`{}`)
	}
	return ToolCall{ID: id, Name: name, Arguments: args}
}

// NewToolResult is the event of a tool call's result, its output clipped
// to [MaxViewOutput] bytes at a rune boundary and followed by a note of
// how much more the model got.
func NewToolResult(id, name string, ok bool, output string) ToolResult {
	return ToolResult{ID: id, Name: name, OK: ok, Output: clipView(output)}
}

func clipView(s string) string {
	if len(s) <= MaxViewOutput {
		return s
	}
	cut := MaxViewOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes shown to the model only]", len(s)-cut)
}
