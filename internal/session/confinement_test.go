package session

import (
	"context"
	"strings"
	"testing"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// unconfinedShell is a shell on a machine where no OS layer works.
type unconfinedShell struct{ agent.BashShell }

func (unconfinedShell) Confinement() string {
	return "NO OS CONFINEMENT of file access (no Landlock, no bwrap: bwrap not found); only seccomp, rlimits"
}

// TestPlanStatusSaysWhenTheShellIsUnconfined: the person is told plainly,
// in Plan's status line, when the shell runs without an OS layer, and the
// status names the layers either way.
func TestPlanStatusSaysWhenTheShellIsUnconfined(t *testing.T) {
	ctx := context.Background()
	for _, sh := range []agent.Shell{unconfinedShell{}, agent.BashShell{}} {
		st, err := store.Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		m := NewManager(Config{Store: st, Shell: sh})
		s, err := m.Create(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Submit(ctx, "/plan"); err != nil {
			t.Fatal(err)
		}
		got := s.Status()
		_, none := sh.(unconfinedShell)
		if !got.Plan || got.Confinement == "" {
			t.Fatalf("status = %+v; want Plan on and a confinement", got)
		}
		if none != strings.Contains(got.Text, "NO OS CONFINEMENT") {
			t.Errorf("unconfined=%v: status text %q", none, got.Text)
		}
		if !none && !strings.Contains(got.Confinement, "landlock ABI") {
			t.Errorf("confinement %q; these machines have Landlock", got.Confinement)
		}
	}
}
