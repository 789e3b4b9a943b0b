package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
}

func TestClassifyWrite(t *testing.T) {
	ws, work, cfg := t.TempDir(), t.TempDir(), t.TempDir()
	gitInit(t, ws)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.Symlink(".git", filepath.Join(ws, "innocent"))
	os.Symlink(".git/config", filepath.Join(ws, "notes.txt"))
	os.Symlink("../.git/hooks", filepath.Join(ws, "src", "hooks"))
	r := Roots{Workspace: ws, Work: work}
	for _, c := range []struct {
		path string
		want WriteClass
	}{
		{"main.go", WriteWorkspace},
		{"src/a.go", WriteWorkspace},
		{".gitignore", WriteWorkspace},
		{"docs/.github/x", WriteWorkspace},
		{".git/config", WriteProtected},
		{".GIT/config", WriteProtected},
		{".Git/hooks/pre-commit", WriteProtected},
		{".git./config", WriteProtected},
		{".git /config", WriteProtected},
		{"GIT~1/config", WriteProtected},
		{".g\u200cit/config", WriteProtected},
		{"src/../.git/config", WriteProtected},
		{"./.git/info/attributes", WriteProtected},
		{filepath.Join(ws, ".git", "config"), WriteProtected},
		{"innocent/config", WriteProtected},
		{"notes.txt", WriteProtected},
		{"src/hooks/post-checkout", WriteProtected},
		{"vendor/lib/.git/config", WriteProtected},
		{".planbridge/skills/x/SKILL.md", WriteProtected},
		{".PlanBridge/settings", WriteProtected},
		{"work://notes/a.md", WriteNotes},
		{"work://scratch.md", WriteNotes},
		{"work://plans/current.md", WritePublished},
		{"work://PLANS/current.md", WritePublished},
		{"work://notes/../plans/x.md", WritePublished},
	} {
		got, err := r.ClassifyWrite(c.path, filepath.Join(cfg, "planbridge", "skills"))
		if err != nil {
			t.Errorf("%q: %v", c.path, err)
			continue
		}
		if got.Class != c.want {
			t.Errorf("ClassifyWrite(%q) = %v (%s), want %v", c.path, got.Class, got.Abs, c.want)
		}
	}
	// A worktree whose .git file names a git directory inside the
	// workspace (and its commondir): those are control files too.
	ws2 := t.TempDir()
	os.MkdirAll(filepath.Join(ws2, "meta", "wtdir"), 0o755)
	os.WriteFile(filepath.Join(ws2, ".git"), []byte("gitdir: meta/wtdir\n"), 0o644)
	os.WriteFile(filepath.Join(ws2, "meta", "wtdir", "commondir"), []byte("..\n"), 0o644)
	r2 := Roots{Workspace: ws2}
	for _, p := range []string{"meta/wtdir/HEAD", "meta/config", "meta/hooks/pre-commit"} {
		if got, _ := r2.ClassifyWrite(p); got.Class != WriteProtected {
			t.Errorf("gitdir-file target %q: %v", p, got.Class)
		}
	}
	// A skills folder inside the workspace, named as extra, is protected.
	inSkills := filepath.Join(ws, "cfg", "planbridge", "skills")
	if got, _ := r.ClassifyWrite("cfg/planbridge/skills/x/SKILL.md", inSkills); got.Class != WriteProtected {
		t.Errorf("extra skills folder: %v", got.Class)
	}
}

func TestGateProtectsControlFilesInEveryMode(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws)
	r := Roots{Workspace: ws, Work: t.TempDir()}
	call := func(tool *Tool, args string) ToolCall {
		return ToolCall{Name: tool.Spec.Name, Arguments: json.RawMessage(args)}
	}
	cases := []struct {
		tool *Tool
		args string
	}{
		{writeFileTool, `{"path":".git/config","content":"[core]\n\tfsmonitor = touch /tmp/pwned\n"}`},
		{editFileTool, `{"path":".GIT/config","old":"a","new":"b"}`},
		{applyPatchTool, `{"patch":"--- a/ok.txt\n+++ b/ok.txt\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+evil\n"}`},
		{writeFileTool, `{"path":".planbridge/skills/x/SKILL.md","content":"x"}`},
	}
	for _, mode := range []Mode{ModeAsk, ModeEdits, ModeFullAuto} {
		for _, c := range cases {
			d := Gate{Mode: mode, Roots: r}.Decide(c.tool, call(c.tool, c.args))
			if d.Verdict != Ask || !d.Protected || !strings.Contains(d.Reason, "WARNING") {
				t.Errorf("%s %s %s: %+v, want a warned Ask", mode, c.tool.Spec.Name, c.args, d)
			}
			u := Gate{Mode: mode, Roots: r, Unattended: true}.Decide(c.tool, call(c.tool, c.args))
			if u.Verdict != Refuse || u.Code != CodeProtectedPath {
				t.Errorf("unattended %s %s: %+v, want protected_path refusal", mode, c.tool.Spec.Name, u)
			}
			p := Gate{Mode: mode, Roots: r, Plan: true}.Decide(c.tool, call(c.tool, c.args))
			if p.Verdict != Refuse {
				t.Errorf("Plan %s %s: %+v", mode, c.tool.Spec.Name, p)
			}
		}
		// Ordinary files keep the mode's rule.
		d := Gate{Mode: mode, Roots: r}.Decide(writeFileTool, call(writeFileTool, `{"path":"ok.txt","content":"x"}`))
		if want := map[Mode]Verdict{ModeAsk: Ask, ModeEdits: Run, ModeFullAuto: Run}[mode]; d.Verdict != want || d.Protected {
			t.Errorf("%s ok.txt: %+v", mode, d)
		}
		// The published plan is never the model's.
		pub := Gate{Mode: mode, Roots: r}.Decide(writeFileTool, call(writeFileTool, `{"path":"work://plans/current.md","content":"x"}`))
		if pub.Verdict != Refuse || pub.Code != CodePublishedPlan {
			t.Errorf("%s work://plans: %+v", mode, pub)
		}
	}
	plan := Gate{Plan: true, Mode: ModeFullAuto, Roots: r}
	if d := plan.Decide(writeFileTool, call(writeFileTool, `{"path":"work://notes/n.md","content":"x"}`)); d.Verdict != Run {
		t.Errorf("Plan notes write: %+v", d)
	}
	d := plan.Decide(applyPatchTool, call(applyPatchTool, `{"patch":"--- work://plans/current.md\n+++ work://plans/current.md\n@@ -1 +1 @@\n-a\n+b\n"}`))
	if d.Verdict != Refuse || !strings.Contains(d.Reason, NotesDir) {
		t.Errorf("Plan patch of the published plan: %+v", d)
	}
}

// The executors check again: a call the gate did not mark as confirmed
// cannot write a protected path, even in full-auto.
func TestExecutorsRefuseProtectedWithoutConfirmation(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws)
	cfg := filepath.Join(ws, ".git", "config")
	before, _ := os.ReadFile(cfg)
	env := &Env{Roots: Roots{Workspace: ws, Work: t.TempDir()}}
	args := json.RawMessage(`{"path":".git/config","content":"x"}`)
	if _, err := writeFileTool.Run(context.Background(), env, args); !errors.Is(err, ErrProtected) {
		t.Fatalf("write_file .git/config: %v", err)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatal(".git/config changed")
	}
	env.AllowProtected = true
	if _, err := writeFileTool.Run(context.Background(), env, args); err != nil {
		t.Fatalf("confirmed write: %v", err)
	}
	if _, err := writeFileTool.Run(context.Background(), env, json.RawMessage(`{"path":"work://plans/current.md","content":"x"}`)); !errors.Is(err, ErrPublished) {
		t.Fatalf("published plan write: %v", err)
	}
}

func patchArgs(p string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"patch": p})
	return b
}

func TestApplyPatchAtomic(t *testing.T) {
	ws := t.TempDir()
	write := func(name, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755)
		os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	write("a.txt", "a\n")
	write("b.txt", "b\n")
	write("blocker", "a file where a directory is needed\n")
	env := &Env{Roots: Roots{Workspace: ws, Work: t.TempDir()}}
	two := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"

	// The second file cannot be staged: the first stays untouched.
	p := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- /dev/null\n+++ b/blocker/new.txt\n@@ -0,0 +1 @@\n+n\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(p)); err == nil {
		t.Fatal("patch into a file-as-directory applied")
	}
	if read("a.txt") != "a\n" {
		t.Fatalf("first file changed: %q", read("a.txt"))
	}

	// The second move fails after the first happened: the first is restored,
	// a created file is removed, a created directory too.
	files, _ := ParsePatch("--- /dev/null\n+++ b/newdir/sub/c.txt\n@@ -0,0 +1 @@\n+c\n" + two)
	_, err := applyPatch(env, files, func(i int) error {
		if i == 2 {
			return errors.New("disk full")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("injected failure: %v", err)
	}
	if read("a.txt") != "a\n" || read("b.txt") != "b\n" {
		t.Fatalf("not restored: a=%q b=%q", read("a.txt"), read("b.txt"))
	}
	if _, err := os.Stat(filepath.Join(ws, "newdir")); !os.IsNotExist(err) {
		t.Fatalf("created directory left behind: %v", err)
	}
	ents, _ := os.ReadDir(ws)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".patch") {
			t.Errorf("staged file left behind: %s", e.Name())
		}
	}

	// A path touched twice, however spelled, is refused.
	dup := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/./a.txt\n+++ b/./a.txt\n@@ -1 +1 @@\n-a\n+A\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(dup)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate path: %v", err)
	}
	twice := "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+1\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+2\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(twice)); err == nil {
		t.Fatal("creating one file twice succeeded")
	}
	if _, err := os.Stat(filepath.Join(ws, "n.txt")); !os.IsNotExist(err) {
		t.Fatal("n.txt created")
	}

	// Deleting a symlink removes the link, not its target.
	write("target.txt", "keep\n")
	os.Symlink("target.txt", filepath.Join(ws, "link.txt"))
	del := "--- a/link.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-keep\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(del)); err != nil {
		t.Fatalf("delete link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "link.txt")); !os.IsNotExist(err) {
		t.Fatal("link still there")
	}
	if read("target.txt") != "keep\n" {
		t.Fatalf("target changed: %q", read("target.txt"))
	}

	// work:// in Plan: the same all-or-nothing.
	os.MkdirAll(filepath.Join(env.Roots.Work, "notes"), 0o755)
	os.WriteFile(filepath.Join(env.Roots.Work, "notes", "a.md"), []byte("x\n"), 0o644)
	wp := "--- work://notes/a.md\n+++ work://notes/a.md\n@@ -1 +1 @@\n-x\n+y\n--- /dev/null\n+++ work://plans/current.md\n@@ -0,0 +1 @@\n+z\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(wp)); !errors.Is(err, ErrPublished) {
		t.Fatalf("work:// patch with the published plan: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Roots.Work, "notes", "a.md")); string(b) != "x\n" {
		t.Fatalf("work://notes/a.md changed: %q", b)
	}
	os.WriteFile(filepath.Join(env.Roots.Work, "blocker"), []byte("file\n"), 0o644)
	wp = "--- work://notes/a.md\n+++ work://notes/a.md\n@@ -1 +1 @@\n-x\n+y\n--- /dev/null\n+++ work://blocker/b.md\n@@ -0,0 +1 @@\n+z\n"
	if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(wp)); err == nil {
		t.Fatal("work:// patch whose second file cannot be written applied")
	}
	if b, _ := os.ReadFile(filepath.Join(env.Roots.Work, "notes", "a.md")); string(b) != "x\n" {
		t.Fatalf("work://notes/a.md changed by a failed patch: %q", b)
	}

	// Unprivileged, a directory without write permission fails the move
	// itself (root writes anyway; the injected failure above covers it).
	if os.Geteuid() != 0 {
		ro := filepath.Join(ws, "ro")
		os.MkdirAll(ro, 0o755)
		os.WriteFile(filepath.Join(ro, "r.txt"), []byte("r\n"), 0o644)
		os.Chmod(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		p := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/ro/r.txt\n+++ b/ro/r.txt\n@@ -1 +1 @@\n-r\n+R\n"
		if _, err := applyPatchTool.Run(context.Background(), env, patchArgs(p)); err == nil {
			t.Fatal("patch into a read-only directory applied")
		}
		if read("a.txt") != "a\n" {
			t.Fatalf("first file changed although the second could not be written: %q", read("a.txt"))
		}
	}
}

// TestClassifyWriteRel: a workspace write names the file really written
// relative to the resolved workspace (the path a declared scope judges),
// whether the workspace or the file is reached through a symlink or
// spelled absolutely; every other class names none.
func TestClassifyWriteRel(t *testing.T) {
	real, work := t.TempDir(), t.TempDir()
	gitInit(t, real)
	os.MkdirAll(filepath.Join(real, "src", "deep"), 0o755)
	os.WriteFile(filepath.Join(real, "src", "target.go"), nil, 0o644)
	os.Symlink("src/target.go", filepath.Join(real, "alias.go"))
	os.Symlink("src", filepath.Join(real, "srclink"))
	os.Symlink(filepath.Join(work, "notes"), filepath.Join(real, "tonotes"))
	os.MkdirAll(filepath.Join(work, "notes"), 0o755)
	// The workspace itself is reached through a link.
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	r := Roots{Workspace: ws, Work: work}
	for _, c := range []struct {
		path  string
		class WriteClass
		rel   string
	}{
		{"a.go", WriteWorkspace, "a.go"},
		{"src/deep/new.go", WriteWorkspace, "src/deep/new.go"},
		{"./src/../b.go", WriteWorkspace, "b.go"},
		{filepath.Join(ws, "src", "x.go"), WriteWorkspace, "src/x.go"},
		{"alias.go", WriteWorkspace, "src/target.go"}, // the file really written
		{"srclink/z.go", WriteWorkspace, "src/z.go"},  // through a linked folder
		{".", WriteWorkspace, "."},                    // the workspace itself
		{"work://notes/n.md", WriteNotes, ""},
		{"work://plans/current.md", WritePublished, ""},
		{".git/config", WriteProtected, ""},
	} {
		got, err := r.ClassifyWrite(c.path)
		if err != nil {
			t.Errorf("ClassifyWrite(%q): %v", c.path, err)
			continue
		}
		if got.Class != c.class || got.Rel != c.rel {
			t.Errorf("ClassifyWrite(%q) = %v %q, want %v %q", c.path, got.Class, got.Rel, c.class, c.rel)
		}
	}
	// Out of the workspace, a link into work:// included: refused, no Rel.
	for _, p := range []string{"../escape.go", "/etc/passwd", filepath.Join(real, "..", "x"), "tonotes/n.md"} {
		if got, err := r.ClassifyWrite(p); err == nil {
			t.Errorf("ClassifyWrite(%q) = %v %q, want refused", p, got.Class, got.Rel)
		}
	}
}
