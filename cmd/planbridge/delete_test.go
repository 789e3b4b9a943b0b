package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"planbridge/rpc"
)

// refusalCode is data.code of an application error, or "".
func refusalCode(err error) string {
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Data == nil {
		return ""
	}
	var data struct{ Code string }
	json.Unmarshal(*je.Data, &data)
	return data.Code
}

// TestSessionDelete: session/delete removes a finished session's rows and
// work:// files, never the workspace; it refuses a session whose turn runs
// or whose Goal is unfinished, changing nothing; the state directory is
// healthy afterwards (a restart starts, doctor is happy).
func TestSessionDelete(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	// Each session replays the script from its start, so the first
	// response is the slow one every session's first turn gets.
	script := writeScript(t, `[{"text": "slow `+strings.Repeat(".", 200)+`", "delay_ms": 40},
	  {"text": "done"},
	  {"text": "goal turn"}]`)
	p := startServe(t, state, "--engine", "script", "--script", script)
	del := func(id string) error {
		return p.c.Call(ctx, "session/delete", map[string]string{"session": id}, nil)
	}
	listed := func() map[string]bool {
		var list []sessionInfo
		if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range list {
			out[s.ID] = true
		}
		return out
	}

	a := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": a.ID, "text": "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	workFile := filepath.Join(state, "sessions", a.ID, "work", "note.txt")
	os.MkdirAll(filepath.Dir(workFile), 0o700)
	if err := os.WriteFile(workFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A running turn: refused, nothing changes.
	b := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": b.ID, "text": "take your time"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" && e.Session == b.ID }); err != nil {
		t.Fatal(err)
	}
	if err := del(b.ID); refusalCode(err) != "busy" {
		t.Fatalf("delete during a turn: %v", err)
	}
	waitTurnEnd(t, ctx, p.c, 2)

	// An unfinished Goal: refused.
	c := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": c.ID, "text": "/goal keep going"}, nil); err != nil {
		t.Fatal(err)
	}
	// The script runs out: the Goal pauses, unfinished, and nothing runs.
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "status" && e.Session == c.ID && strings.Contains(string(e.Data), "Goal paused") && strings.Contains(string(e.Data), `"busy":false`)
	}); err != nil {
		t.Fatal(err)
	}
	if err := del(c.ID); refusalCode(err) != "session_in_use" || !strings.Contains(err.Error(), "Goal") {
		t.Fatalf("delete with an unfinished Goal: %v", err)
	}
	for _, id := range []string{b.ID, c.ID} {
		if !listed()[id] {
			t.Fatalf("refused delete removed %s", id)
		}
		if _, err := os.Stat(filepath.Join(state, "sessions", id)); err != nil {
			t.Fatalf("refused delete removed the directory of %s: %v", id, err)
		}
	}

	// A finished session goes: rows, files; the workspace stays.
	if err := del(a.ID); err != nil {
		t.Fatal(err)
	}
	if listed()[a.ID] {
		t.Fatal("deleted session still listed")
	}
	if _, err := os.Stat(filepath.Join(state, "sessions", a.ID)); !os.IsNotExist(err) {
		t.Fatalf("session directory left: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "sessions")); len(ents) != 2 {
		t.Fatalf("sessions dir has %d entries, want the 2 kept", len(ents))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "a\n" {
		t.Fatalf("workspace touched: %q %v", b, err)
	}
	if err := p.c.Call(ctx, "session/open", map[string]string{"session": a.ID}, nil); refusalCode(err) != "not_found" {
		t.Fatalf("open a deleted session: %v", err)
	}
	if err := del(a.ID); refusalCode(err) != "not_found" {
		t.Fatalf("delete twice: %v", err)
	}
	p.stop()

	// The state directory is healthy: a new server starts and lists the rest.
	p = startServe(t, state, "--engine", "script", "--script", script)
	var list []sessionInfo
	if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
		t.Fatalf("restart after delete: %v\n%s", err, p.stderr)
	}
	if len(list) != 2 {
		t.Fatalf("after restart %d sessions listed, want 2", len(list))
	}
	p.stop()
	var db int
	st := p.opened(t)
	st.DB().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM events WHERE session_id = ?`, a.ID).Scan(&db)
	if db != 0 {
		t.Fatalf("%d event rows of the deleted session remain", db)
	}
	// The script engine's position of the deleted session goes with it
	// (before, its "script-cursor:<script>:<id>" row stayed forever); the
	// kept sessions' positions stay.
	var cursors, kept int
	st.DB().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM kv WHERE key LIKE '%' || ?`, a.ID).Scan(&cursors)
	if cursors != 0 {
		t.Fatalf("%d key-value rows of the deleted session remain", cursors)
	}
	st.DB().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM session_values WHERE session_id = ?`, a.ID).Scan(&cursors)
	if cursors != 0 {
		t.Fatalf("%d values of the deleted session remain", cursors)
	}
	st.DB().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM session_values WHERE key LIKE 'script-cursor:%'`).Scan(&kept)
	if kept != 2 {
		t.Fatalf("%d script positions stored for the 2 sessions kept", kept)
	}
}

// TestStartSaysWhatADeleteLeft: a server starting after deletes a crash
// cut short settles what it can and starts even when one cannot be
// settled, saying so (stderr, and initialize's warnings for the client)
// instead of refusing to start: a deleted session's files it cannot
// remove (as nobody: a directory beyond its permissions; root ignores
// permissions) stay aside, named; a live session's moved files are put
// back, nothing lost. Before, the first directory it could not remove
// stopped the server.
func TestStartSaysWhatADeleteLeft(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	p := startServe(t, state)
	gone := createSession(t, ctx, p.c, t.TempDir())
	kept := createSession(t, ctx, p.c, t.TempDir())
	p.stop()
	sessions := filepath.Join(state, "sessions")
	plan := filepath.Join("work", "plans", "accepted-1.md")
	// kept: killed after its directory went aside, its rows kept.
	if err := os.MkdirAll(filepath.Join(sessions, kept.ID, filepath.Dir(plan)), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sessions, kept.ID, plan), []byte("# kept\n"), 0o600)
	if err := os.Rename(filepath.Join(sessions, kept.ID), filepath.Join(sessions, ".deleted-"+kept.ID)); err != nil {
		t.Fatal(err)
	}
	// gone: killed after its rows went, its files aside, one directory
	// of them not writable.
	st := p.opened(t)
	if err := st.DeleteSession(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	st.Close()
	trash := filepath.Join(sessions, ".deleted-"+gone.ID)
	locked := filepath.Join(trash, "work", "plans")
	os.MkdirAll(locked, 0o700)
	os.WriteFile(filepath.Join(locked, "accepted-1.md"), []byte("# gone\n"), 0o600)
	os.Chmod(locked, 0o500)
	t.Cleanup(func() { os.Chmod(locked, 0o700) })

	p = startServeAs(t, true, state, nil)
	var init struct {
		Warnings []string `json:"warnings"`
	}
	if err := p.c.Call(ctx, "initialize", map[string]any{}, &init); err != nil {
		t.Fatalf("the server did not start: %v\n%s", err, p.stderr)
	}
	if len(init.Warnings) != 1 || !strings.Contains(init.Warnings[0], trash) || !strings.Contains(init.Warnings[0], "remove it by hand") {
		t.Errorf("initialize's warnings = %q: want the one directory it could not remove, named", init.Warnings)
	}
	var list []sessionInfo
	if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil || len(list) != 1 || list[0].ID != kept.ID {
		t.Fatalf("session/list = %+v %v: want the kept session", list, err)
	}
	if b, err := os.ReadFile(filepath.Join(sessions, kept.ID, plan)); string(b) != "# kept\n" {
		t.Errorf("the kept session's plan after the start: %q %v", b, err)
	}
	p.stop()
	if !strings.Contains(p.stderr.String(), trash) {
		t.Errorf("stderr does not say what the start left: %q", p.stderr)
	}
}

// TestDeleteSaysWhatItLeft: a session whose rows are deleted but whose
// files cannot all be removed (as nobody: a directory beyond its
// permissions) is deleted, and session/delete says so with a warning
// naming where the files stay; the next start names them again. Before,
// the delete answered an error although the session was gone.
func TestDeleteSaysWhatItLeft(t *testing.T) {
	ctx := ctxT(t)
	state, ws := t.TempDir(), t.TempDir()
	p := startServeAs(t, true, state, []string{ws})
	s := createSession(t, ctx, p.c, ws)
	locked := filepath.Join(state, "sessions", s.ID, "work", "plans")
	if err := os.MkdirAll(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(locked, "v1.md"), []byte("# plan\n"), 0o600)
	for _, p := range []string{filepath.Dir(locked), locked, filepath.Join(locked, "v1.md")} {
		os.Lchown(p, nobody, nobody) // a no-op unless the test is root
	}
	os.Chmod(locked, 0o500)
	trash := filepath.Join(state, "sessions", ".deleted-"+s.ID)
	t.Cleanup(func() { os.Chmod(filepath.Join(trash, "work", "plans"), 0o700); os.Chmod(locked, 0o700) })
	var res struct {
		Deleted bool   `json:"deleted"`
		Warning string `json:"warning"`
	}
	if err := p.c.Call(ctx, "session/delete", map[string]string{"session": s.ID}, &res); err != nil {
		t.Fatalf("session/delete = %v: the session's rows are gone, so it is deleted", err)
	}
	if !res.Deleted || !strings.Contains(res.Warning, trash) || !strings.Contains(res.Warning, "is deleted") {
		t.Errorf("session/delete = %+v: want deleted with a warning naming %s", res, trash)
	}
	var list []sessionInfo
	if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil || len(list) != 0 {
		t.Errorf("session/list = %+v %v", list, err)
	}
	p.stop()
	p = startServeAs(t, true, state, nil)
	var init struct {
		Warnings []string `json:"warnings"`
	}
	if err := p.c.Call(ctx, "initialize", map[string]any{}, &init); err != nil || len(init.Warnings) != 1 || !strings.Contains(init.Warnings[0], trash) {
		t.Errorf("the next start: %q %v", init.Warnings, err)
	}
}
