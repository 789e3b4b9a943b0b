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

// geminiModel is a fake Gemini API (streamGenerateContent over SSE) for
// Gemini CLI, scripted like claudeModel: the main requests (offering
// write_file) follow the Plan then implementation steps; any other
// request gets a short text.
type geminiModel struct {
	ws  string
	mu  sync.Mutex
	log []string
}

func (f *geminiModel) steps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *geminiModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Contents []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(raw, &body)
	main := false
	for _, tl := range body.Tools {
		for _, d := range tl.FunctionDeclarations {
			main = main || d.Name == "write_file"
		}
	}
	impl := strings.Contains(string(raw), "Create notes.txt")
	last := ""
	if n := len(body.Contents); n > 0 {
		for _, p := range body.Contents[n-1].Parts {
			if fr, ok := p["functionResponse"].(map[string]any); ok {
				last = fmt.Sprint(fr["name"])
			}
		}
	}
	step := "other"
	if main {
		switch {
		case impl && last == "write_file":
			step = "impl-done"
		case impl && last == "":
			step = "impl-write"
		case last == "write_file":
			step = "plan-bash"
		case last == "run_shell_command":
			step = "plan-propose"
		case last == "":
			step = "plan-write"
		}
		f.mu.Lock()
		f.log = append(f.log, step)
		f.mu.Unlock()
	}
	var parts []map[string]any
	text := func(s string) { parts = append(parts, map[string]any{"text": s}) }
	call := func(name string, args map[string]string) {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
	}
	switch step {
	case "plan-write":
		text("Writing the notes first.\n")
		call("write_file", map[string]string{"file_path": filepath.Join(f.ws, "notes.txt"), "content": "written in Plan\n"})
	case "plan-bash":
		call("run_shell_command", map[string]string{"command": "touch pwned.txt", "description": "Create a file"})
	case "plan-propose":
		text(acpPlanProposal)
	case "impl-write":
		text("Implementing.\n")
		call("write_file", map[string]string{"file_path": filepath.Join(f.ws, "notes.txt"), "content": "notes from Gemini CLI\n"})
	case "impl-done":
		text("Done: notes.txt written.\n")
	default:
		text(`{"reasoning":"the model is done","next_speaker":"user"}`)
	}
	resp := map[string]any{
		"candidates":    []map[string]any{{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-flash",
	}
	b, _ := json.Marshal(resp)
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// TestACPGeminiThroughTheBinary: Gemini CLI (which uses the client's fs
// methods) as the engine against a fake Gemini API: the same Plan and
// implementation checks as for Claude Code.
func TestACPGeminiThroughTheBinary(t *testing.T) {
	t.Parallel() // each waits on its own agent; together they stay within make test's budget
	gemini := acpBin(t, "gemini")
	ws := gitRepo(t, map[string]string{"README": "readme\n"})
	fake := &geminiModel{ws: ws}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	home := acpHome(t)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"privacy":{"usageStatisticsEnabled":false},"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o644)
	acpPlanThenImplement(t, ws, []string{gemini, "--acp", "-m", "gemini-2.5-flash"}, map[string]string{
		"HOME": home, "GOOGLE_GEMINI_BASE_URL": srv.URL, "GEMINI_API_KEY": "fake-gemini-key",
	}, "notes from Gemini CLI\n", fake.steps)
}
