package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flakyCursors is a CursorStore whose reads and writes fail while failLoad
// or failSave is set, as a busy or damaged database would.
type flakyCursors struct {
	pos                map[string]int
	failLoad, failSave bool
}

var errStore = errors.New("database is locked")

func (c *flakyCursors) LoadCursor(session string) (int, bool, error) {
	if c.failLoad {
		return 0, false, errStore
	}
	n, ok := c.pos[session]
	return n, ok, nil
}

func (c *flakyCursors) SaveCursor(session string, pos int) error {
	if c.failSave {
		return errStore
	}
	c.pos[session] = pos
	return nil
}

// TestScriptCursorStoreErrors: a restarted process whose stored replay
// position cannot be read must not replay the script from its first step
// (a Goal's continuation would get the plan's answer, its expectation
// fail and the Goal pause); a position that cannot be saved must not be
// consumed either. Both fail the request and leave the position as it was.
func TestScriptCursorStoreErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte(`[{"text":"step one"},{"text":"step two"},{"text":"step three"}]`), 0o644)
	cur := &flakyCursors{pos: map[string]int{"s1": 1}} // the killed process had consumed step one
	s, err := LoadScript(f)
	if err != nil {
		t.Fatal(err)
	}
	s.Cursors = cur
	eng := s.ForSession("s1", "")
	stream := func() (string, error) {
		r, err := eng.Stream(context.Background(), Request{}, func(string) {})
		return r.Text, err
	}
	cur.failLoad = true
	if text, err := stream(); !errors.Is(err, errStore) {
		t.Fatalf("unreadable position: got %q, %v; want the store's error", text, err)
	}
	cur.failLoad = false
	cur.failSave = true
	if text, err := stream(); !errors.Is(err, errStore) {
		t.Fatalf("unsavable position: got %q, %v; want the store's error", text, err)
	}
	cur.failSave = false
	if text, err := stream(); err != nil || text != "step two" {
		t.Fatalf("after the store recovered: %q, %v; want step two", text, err)
	}
	if cur.pos["s1"] != 2 || s.Pos("s1") != 2 {
		t.Fatalf("positions stored %d, in memory %d; want 2", cur.pos["s1"], s.Pos("s1"))
	}
	if _, err := stream(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream(); !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), "3 responses") {
		t.Fatalf("want exhausted after three steps, got %v", err)
	}
}
