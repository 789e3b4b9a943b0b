package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlanAgentInheritsNoDescriptors: the confined Plan agent holds no
// descriptor of planbridge's (its database, the workspace, a socket): an
// open descriptor is outside every rule Landlock and the mounts apply at
// open time. The agent here is a script that lists its descriptors into
// its own home and exits: only its stdin, stdout and stderr are there.
func TestPlanAgentInheritsNoDescriptors(t *testing.T) {
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			ws := gitRepo(t, map[string]string{"README": "readme\n"})
			state := t.TempDir()
			bin := t.TempDir()
			os.Chmod(bin, 0o755)
			script := filepath.Join(bin, "fds-agent")
			// The script keeps its stdout (the ACP pipe) open until the
			// list is in place: planbridge sees the agent end only then.
			os.WriteFile(script, []byte("#!/bin/sh\n/bin/ls /proc/self/fd > \"$HOME/fds.tmp\" && mv \"$HOME/fds.tmp\" \"$HOME/fds.txt\"\nexit 1\n"), 0o755)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			p := startServeAs(t, who == "nobody", state, []string{ws}, "--log", filepath.Join(state, "serve.log"))
			if err := p.c.Call(ctx, "initialize", map[string]any{"engine": map[string]any{"kind": "acp", "command": []string{script}}}, nil); err != nil {
				t.Fatal(err)
			}
			s := createSession(t, ctx, p.c, ws)
			if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan list them"}, nil); err != nil {
				t.Fatal(err)
			}
			waitTurnEnd(t, ctx, p.c, 1)
			b, err := os.ReadFile(filepath.Join(state, "acp", "plan", "home", "fds.txt"))
			if err != nil {
				t.Fatalf("the agent did not run confined: %v", err)
			}
			// ls's own: stdin, stdout (the list), stderr, and the
			// directory it reads.
			if got := strings.Fields(string(b)); strings.Join(got, " ") != "0 1 2 3" {
				t.Errorf("the Plan agent holds descriptors %v, want 0 1 2 (and ls's 3)", got)
			}
		})
	}
}
