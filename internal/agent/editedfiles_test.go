package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEditedFiles: the workspace files a built-in file tool's call names,
// workspace-relative and clean; work:// files, other tools and arguments
// that do not parse name none.
func TestEditedFiles(t *testing.T) {
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	patch := "--- a/old.go\n+++ b/new/file.go\n@@ -1 +1 @@\n-a\n+b\n"
	created := "--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+x\n"
	for _, c := range []struct {
		name string
		call ToolCall
		want []string
	}{
		{"write_file, relative", ToolCall{Name: "write_file", Arguments: args(map[string]string{"path": "./a/../b/c.txt", "content": "x"})}, []string{"b/c.txt"}},
		{"edit_file, absolute inside", ToolCall{Name: "edit_file", Arguments: args(map[string]string{"path": "/ws/src/x.go"})}, []string{"src/x.go"}},
		{"absolute outside", ToolCall{Name: "write_file", Arguments: args(map[string]string{"path": "/etc/passwd"})}, []string{"../etc/passwd"}},
		{"a work:// file", ToolCall{Name: "write_file", Arguments: args(map[string]string{"path": "work://notes/a.md"})}, nil},
		{"an empty path", ToolCall{Name: "write_file", Arguments: args(map[string]string{"path": ""})}, nil},
		{"arguments that do not parse", ToolCall{Name: "edit_file", Arguments: json.RawMessage(`{"path":`)}, nil},
		{"a patch: both sides", ToolCall{Name: "apply_patch", Arguments: args(map[string]string{"patch": patch})}, []string{"old.go", "new/file.go"}},
		{"a patch creating a file", ToolCall{Name: "apply_patch", Arguments: args(map[string]string{"patch": created})}, []string{"made.txt"}},
		{"a patch that does not parse", ToolCall{Name: "apply_patch", Arguments: args(map[string]string{"patch": "nonsense"})}, nil},
		{"another tool", ToolCall{Name: "bash", Arguments: args(map[string]string{"command": "touch x", "path": "x"})}, nil},
		{"a tool named like a file", ToolCall{Name: "write_file.sh", Arguments: args(map[string]string{"path": "x"})}, nil},
	} {
		if got := EditedFiles(c.call, "/ws"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
