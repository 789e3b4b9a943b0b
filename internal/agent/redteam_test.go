package agent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// TestClassifyWriteGitDirIndirections: a git directory is a control
// directory wherever it lives and however it is named. Git follows a
// ".git" symlink (the Android repo tool's layout), a nested repository's
// ".git" symlink or gitdir file, and uses any directory that is itself a
// git directory (a bare repository, ".repo/projects/x.git"); a write into
// one of those is a write to a repository control file even though no
// component of the resolved path is spelled ".git".
func TestClassifyWriteGitDirIndirections(t *testing.T) {
	ws := t.TempDir()
	// Root: .git is a symlink to gitstore inside the workspace.
	gitInit(t, ws)
	if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "gitstore")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("gitstore", filepath.Join(ws, ".git"))
	mustGit(t, ws, "status") // git really uses it
	// A nested repository whose .git is a symlink to a sibling store.
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	gitInit(t, filepath.Join(ws, "sub"))
	os.Rename(filepath.Join(ws, "sub", ".git"), filepath.Join(ws, "store2"))
	os.Symlink("../store2", filepath.Join(ws, "sub", ".git"))
	mustGit(t, filepath.Join(ws, "sub"), "status")
	// A nested repository with a gitdir file (git init --separate-git-dir).
	os.MkdirAll(filepath.Join(ws, "meta"), 0o755)
	mustGit(t, ws, "init", "-q", "--separate-git-dir", filepath.Join(ws, "meta", "store3"), filepath.Join(ws, "sub3"))
	mustGit(t, filepath.Join(ws, "sub3"), "status")
	// A bare repository under an innocent name.
	mustGit(t, ws, "init", "-q", "--bare", filepath.Join(ws, ".repo", "projects", "x.git"))
	// A symlink inside .git pointing at a workspace file (a shared hook).
	os.WriteFile(filepath.Join(ws, "hook.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("../../hook.sh", filepath.Join(ws, "gitstore", "hooks", "pre-commit"))

	r := Roots{Workspace: ws, Work: t.TempDir()}
	for _, p := range []string{
		".git/config", // through the .git symlink
		"gitstore/config",
		"gitstore/hooks/post-checkout",
		"store2/config",
		"store2/hooks/pre-commit",
		"sub/.git/config",
		"meta/store3/config",
		".repo/projects/x.git/config",
		".repo/projects/x.git/hooks/post-update",
		".git/hooks/pre-commit", // the link itself lives in .git
	} {
		got, err := r.ClassifyWrite(p)
		if err != nil {
			t.Errorf("%q: %v", p, err)
			continue
		}
		if got.Class != WriteProtected {
			t.Errorf("ClassifyWrite(%q) = %v (%s), want protected", p, got.Class, got.Abs)
		}
	}
	for _, p := range []string{"hook.sh", "sub/a.go", "meta/readme", ".repo/manifest.xml"} {
		if got, err := r.ClassifyWrite(p); err != nil || got.Class != WriteWorkspace {
			t.Errorf("ClassifyWrite(%q) = %v %v, want workspace", p, got.Class, err)
		}
	}
}

// TestClassifyWriteLinkInPlans: a link under work://plans/ pointing into
// the notes area is still in plans/ — deleting it changes the published
// plan's folder.
func TestClassifyWriteLinkInPlans(t *testing.T) {
	ws, work := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(work, "plans"), 0o755)
	os.MkdirAll(filepath.Join(work, "notes"), 0o755)
	os.WriteFile(filepath.Join(work, "notes", "n.md"), []byte("n\n"), 0o644)
	os.Symlink("../notes/n.md", filepath.Join(work, "plans", "current.md"))
	r := Roots{Workspace: ws, Work: work}
	got, err := r.ClassifyWrite("work://plans/current.md")
	if err != nil || got.Class != WritePublished {
		t.Errorf("work://plans/current.md (a link to notes) = %v %v, want published", got.Class, err)
	}
}

// TestClassifyWriteHooksPath: with core.hooksPath pointing into the
// checkout (husky's layout), git runs that folder's files on commit, so
// they are control files like .git/hooks.
func TestClassifyWriteHooksPath(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws)
	mustGit(t, ws, "config", "core.hooksPath", ".husky")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	r := Roots{Workspace: ws}
	for p, want := range map[string]WriteClass{
		".husky/pre-commit":   WriteProtected,
		".husky/_/husky.sh":   WriteProtected,
		"src/../.husky/x":     WriteProtected,
		".husky-notes/readme": WriteWorkspace,
		"src/main.go":         WriteWorkspace,
	} {
		got, err := r.ClassifyWrite(p)
		if err != nil || got.Class != want {
			t.Errorf("ClassifyWrite(%q) = %v %v, want %v", p, got.Class, err, want)
		}
	}
	// Set in a subfolder's view too: the workspace may be part of a repo.
	sub := Roots{Workspace: filepath.Join(ws, "src")}
	mustGit(t, ws, "config", "core.hooksPath", "src/hooks")
	if got, err := sub.ClassifyWrite("hooks/post-checkout"); err != nil || got.Class != WriteProtected {
		t.Errorf("hooksPath inside a workspace that is a subfolder: %v %v", got.Class, err)
	}
}

// TestACPPermissionCannotCoverAProtectedWrite: an agent that lists
// .git/config in an unrelated permission (a shell command, allowed
// without a question in full-auto, or by a person who read no warning)
// and then writes it through fs/write_text_file is still asked with the
// warning: only a yes to that warning covers a protected write.
func TestACPPermissionCannotCoverAProtectedWrite(t *testing.T) {
	eng := newFakeACP(t)
	for _, mode := range []Mode{ModeFullAuto, ModeAsk} {
		ws := t.TempDir()
		gitInit(t, ws)
		cfg := filepath.Join(ws, ".git", "config")
		before, _ := os.ReadFile(cfg)
		var reasons []string
		// Yes to the plain shell question, no to any warning.
		ask := func(ctx context.Context, c ToolCall, reason string) (bool, error) {
			reasons = append(reasons, reason)
			return !strings.Contains(reason, "WARNING"), nil
		}
		tn, _ := acpTurnOf(eng, ws, t.TempDir(), "listwrite "+cfg, false, mode, ask)
		if _, err := tn.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(cfg); !bytes.Equal(b, before) {
			t.Errorf("%s: .git/config was written: %q", mode, b)
		}
		if len(reasons) == 0 || !strings.Contains(reasons[len(reasons)-1], "WARNING") {
			t.Errorf("%s: the write was not asked with the warning: %q", mode, reasons)
		}
	}
}

// TestClassifyWriteLinkInSkills: a link inside a skills folder is part of
// the skills configuration even when it points at an ordinary file:
// deleting or replacing it changes what the agent follows.
func TestClassifyWriteLinkInSkills(t *testing.T) {
	ws := t.TempDir()
	skills := filepath.Join(ws, "cfg", "planbridge", "skills")
	os.MkdirAll(skills, 0o755)
	os.WriteFile(filepath.Join(ws, "other.md"), []byte("x\n"), 0o644)
	os.Symlink("../../../other.md", filepath.Join(skills, "x.md"))
	r := Roots{Workspace: ws}
	if got, err := r.ClassifyWrite("cfg/planbridge/skills/x.md", skills); err != nil || got.Class != WriteProtected {
		t.Errorf("a link in the skills folder: %v %v, want protected", got.Class, err)
	}
	if got, err := r.ClassifyWrite("other.md", skills); err != nil || got.Class != WriteWorkspace {
		t.Errorf("the link's target by its own name: %v %v, want workspace", got.Class, err)
	}
}
