package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveToProject: never overwrites, never writes through a link or a
// non-directory, reuses identical content, suffixes a taken name, and
// names no absolute path in its refusals.
func TestSaveToProject(t *testing.T) {
	plan := []byte("# Rename the greeting\n")
	other := []byte("# Rename the greeting\n\nanother text\n")
	outside := t.TempDir()
	cases := []struct {
		name    string
		setup   func(ws string)
		data    []byte
		want    string // the path, or the refusal's text
		refused bool
	}{
		{"fresh", nil, plan, "docs/plans/2026-12-01-rename-the-greeting.md", false},
		{"identical reused", func(ws string) { SaveToProject(ws, "2026-12-01", "Rename the greeting", plan) }, plan, "docs/plans/2026-12-01-rename-the-greeting.md", false},
		{"other content suffixed", func(ws string) { SaveToProject(ws, "2026-12-01", "Rename the greeting", plan) }, other, "docs/plans/2026-12-01-rename-the-greeting-2.md", false},
		{"a directory holds the name", func(ws string) {
			os.MkdirAll(filepath.Join(ws, "docs/plans/2026-12-01-rename-the-greeting.md"), 0o755)
		}, plan, "docs/plans/2026-12-01-rename-the-greeting-2.md", false},
		{"a symlink holds the name", func(ws string) {
			os.MkdirAll(filepath.Join(ws, "docs/plans"), 0o755)
			os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(ws, "docs/plans/2026-12-01-rename-the-greeting.md"))
		}, plan, "docs/plans/2026-12-01-rename-the-greeting-2.md", false},
		{"docs is a file", func(ws string) { os.WriteFile(filepath.Join(ws, "docs"), nil, 0o644) }, plan, "docs is not a directory", true},
		{"docs is a link", func(ws string) { os.Symlink(outside, filepath.Join(ws, "docs")) }, plan, "docs is a symbolic link", true},
		{"docs/plans is a link", func(ws string) {
			os.Mkdir(filepath.Join(ws, "docs"), 0o755)
			os.Symlink(outside, filepath.Join(ws, "docs/plans"))
		}, plan, "docs/plans is a symbolic link", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			if c.setup != nil {
				c.setup(ws)
			}
			got, err := SaveToProject(ws, "2026-12-01", "Rename the greeting", c.data)
			if c.refused {
				if r, ok := err.(*Refusal); !ok || r.Code != CodeSaveFailed || !strings.Contains(r.Message, c.want) || strings.Contains(r.Message, ws) {
					t.Fatalf("err %v, want a refusal %q naming no absolute path", err, c.want)
				}
			} else if err != nil || got != c.want {
				t.Fatalf("got %q %v, want %q", got, err, c.want)
			}
			if !c.refused {
				if b, _ := os.ReadFile(filepath.Join(ws, got)); string(b) != string(c.data) {
					t.Errorf("%s holds %q", got, b)
				}
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("wrote outside the workspace: %v", ents)
			}
		})
	}
	if slug("!!!") != "plan" || slug("Add a --name flag") != "add-a-name-flag" {
		t.Error("slug")
	}
}
