package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// writeEngine writes a.txt with write_file, then says it is done.
type writeEngine struct{}

func (writeEngine) Name() string { return "write" }
func (writeEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
		return agent.Response{Text: "done"}, nil
	}
	return agent.Response{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"x\n"}`)}}}, nil
}

// TestEditedFileNotRecordedIsTold: a turn's edit whose record fails (the
// store's full-disk failpoint on its commit) is an error event naming
// the file — a Worktree fork would not carry it — never silence.
func TestEditedFileNotRecordedIsTold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, t.TempDir(), store.WithFailingCommits(store.OpOther))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := NewManager(Config{Store: st, Engine: writeEngine{}})
	t.Cleanup(m.Close)
	evs := recordEvents(m)
	ws := t.TempDir()
	s, err := m.Create(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ExitPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(ctx, "full-auto"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, "write it"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "x\n" {
		t.Fatalf("the write did not happen: %q %v", b, err)
	}
	var told bool
	for _, e := range evs.of("error") {
		told = told || strings.Contains(e, "Could not save that a.txt was edited (a Worktree fork would not carry it)") && strings.Contains(e, "no space left on device")
	}
	if !told {
		t.Fatalf("not told: errors %q", evs.of("error"))
	}
	if got, _ := st.EditedFiles(ctx, s.ID()); len(got) != 0 {
		t.Fatalf("recorded after all: %q", got)
	}
}
