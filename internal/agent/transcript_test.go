package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCompleteToolCalls: every call gets exactly one result, after its
// message; recorded results are kept as they are; msgs is untouched.
func TestCompleteToolCalls(t *testing.T) {
	call := func(id string) ToolCall { return ToolCall{ID: id, Name: "read_file"} }
	res := func(id, out string) Message {
		return Message{Role: RoleTool, ToolCallID: id, Name: "read_file", Content: out}
	}
	lost := func(id string) Message { return res(id, InterruptedCall) }
	in := []Message{
		{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{call("a"), call("b")}},
		res("a", "ok"),
		{Role: RoleAssistant, Content: "and then", ToolCalls: []ToolCall{call("c")}},
		{Role: RoleUser, Content: "next"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{call("d")}},
	}
	before := append([]Message(nil), in...)
	got := CompleteToolCalls(in)
	want := []Message{in[0], in[1], res("a", "ok"), lost("b"), in[3], lost("c"), in[4], in[5], lost("d")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(in, before) {
		t.Fatal("the input was changed")
	}
	if again := CompleteToolCalls(got); !reflect.DeepEqual(again, got) {
		t.Fatal("a complete conversation was changed")
	}
}

// TestContextSize: what a context window is measured against is every
// message's content and tool-call arguments, and the next prompt.
func TestContextSize(t *testing.T) {
	call := ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"p":1}`)} // 7 bytes
	cases := []struct {
		name string
		msgs []Message
		next string
		want int
	}{
		{"nothing", nil, "", 0},
		{"the next prompt only", nil, "hello", 5},
		{"content", []Message{{Role: RoleUser, Content: "abc"}, {Role: RoleAssistant, Content: "de"}}, "f", 6},
		{"tool calls count their arguments, not their names", []Message{{Role: RoleAssistant, Content: "x", ToolCalls: []ToolCall{call, call}}}, "", 15},
		{"a tool result is content", []Message{{Role: RoleTool, Content: "out", ToolCallID: "c1", Name: "read"}}, "", 3},
	}
	for _, c := range cases {
		if got := ContextSize(c.msgs, c.next); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
