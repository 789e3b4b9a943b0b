package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// codexModel is a fake OpenAI Responses API (streaming) for Codex,
// scripted like claudeModel by the last tool output in the request.
type codexModel struct {
	mu  sync.Mutex
	log []string
	raw []string
}

func (f *codexModel) steps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *codexModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model string           `json:"model"`
		Input []map[string]any `json:"input"`
		Tools []map[string]any `json:"tools"`
	}
	if !strings.HasSuffix(r.URL.Path, "/responses") || json.Unmarshal(raw, &body) != nil {
		w.WriteHeader(404)
		return
	}
	f.mu.Lock()
	f.raw = append(f.raw, string(raw))
	f.mu.Unlock()
	tools := map[string]string{}
	for _, tl := range body.Tools {
		tools[fmt.Sprint(tl["name"])] = fmt.Sprint(tl["type"])
	}
	impl := strings.Contains(string(raw), "Create notes.txt")
	last := ""
	if n := len(body.Input); n > 0 {
		if it := body.Input[n-1]; strings.HasSuffix(fmt.Sprint(it["type"]), "_output") {
			last = fmt.Sprint(it["call_id"])
		}
	}
	step := "other"
	if _, ok := tools["apply_patch"]; ok || len(tools) > 2 {
		refused := strings.Count(string(raw), "planbridge refused:")
		switch {
		case !impl && last == "" && refused == 1:
			step = "plan-bash"
		case !impl && last == "" && refused >= 2:
			step = "plan-propose"
		case impl && last == "call_impl_write":
			step = "impl-done"
		case impl && last == "":
			step = "impl-write"
		case last == "call_plan_write":
			step = "plan-bash"
		case last == "call_plan_bash":
			step = "plan-propose"
		case last == "":
			step = "plan-write"
		}
		f.mu.Lock()
		f.log = append(f.log, step)
		f.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		w.(http.Flusher).Flush()
	}
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1"}})
	text := func(s string) {
		ev(map[string]any{"type": "response.output_text.delta", "delta": s})
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "message", "role": "assistant", "id": "msg_1",
			"content": []map[string]any{{"type": "output_text", "text": s}}}})
	}
	patch := func(id, content string) {
		p := "*** Begin Patch\n*** Add File: notes.txt\n+" + strings.TrimSuffix(content, "\n") + "\n*** End Patch\n"
		if tools["apply_patch"] == "custom" {
			ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "custom_tool_call", "name": "apply_patch", "input": p, "call_id": id}})
			return
		}
		args, _ := json.Marshal(map[string]string{"input": p})
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "function_call", "name": "apply_patch", "arguments": string(args), "call_id": id}})
	}
	shell := func(id, cmd string) {
		var args []byte
		name := "shell"
		if _, ok := tools["shell_command"]; ok {
			name = "shell_command"
			args, _ = json.Marshal(map[string]any{"command": cmd})
		} else {
			args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
		}
		if _, ok := tools["exec_command"]; ok {
			// Outside its own read-only sandbox, which makes Codex ask.
			name = "exec_command"
			args, _ = json.Marshal(map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Create a file?"})
		}
		ev(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "function_call", "name": name, "arguments": string(args), "call_id": id}})
	}
	switch step {
	case "plan-write":
		text("Writing the notes first.\n")
		patch("call_plan_write", "written in Plan")
	case "plan-bash":
		shell("call_plan_bash", "touch pwned.txt")
	case "plan-propose":
		text(acpPlanProposal)
	case "impl-write":
		text("Implementing.\n")
		patch("call_impl_write", "notes from Codex\n")
	case "impl-done":
		text("Done: notes.txt written.\n")
	default:
		text("Notes")
	}
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_1",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}

// TestACPCodexThroughTheBinary: Codex (which applies its own patches and
// has its own sandbox) as the engine against a fake Responses API: the
// same Plan and implementation checks as for Claude Code.
func TestACPCodexThroughTheBinary(t *testing.T) {
	codex := acpBin(t, "codex-acp")
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	fake := &codexModel{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	home := acpHome(t)
	cfg := fmt.Sprintf(`model = "gpt-5.3-codex"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
`, srv.URL)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644)
	defer func() {
		if t.Failed() {
			for _, r := range fake.raw {
				var b struct{ Tools []map[string]any }
				json.Unmarshal([]byte(r), &b)
				for _, tl := range b.Tools {
					t.Logf("tool %v %v %.300v", tl["type"], tl["name"], tl["parameters"])
				}
				break
			}
		}
	}()
	acpPlanThenImplement(t, ws, []string{codex}, map[string]string{
		"HOME": home, "CODEX_HOME": home, "OPENAI_API_KEY": "sk-fake-codex",
	}, "notes from Codex\n", fake.steps)
}
