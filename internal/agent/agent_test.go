package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveConfinement(t *testing.T) {
	ws, work, outside := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "out"))
	os.Symlink(filepath.Join(outside, "x"), filepath.Join(ws, "outfile"))
	os.Symlink("a.txt", filepath.Join(ws, "inlink"))
	r := Roots{Workspace: ws, Work: work}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"a.txt", true}, {"./a.txt", true}, {"new/dir/file", true}, {"inlink", true},
		{filepath.Join(ws, "a.txt"), true}, {"work://plans/current.md", true},
		{"../x", false}, {"a/../../x", false}, {"/etc/passwd", false}, {"out/secret", false},
		{"outfile", false}, {"out", false}, {"work://../x", false}, {"work:///etc/passwd", false},
		{"a\x00b", false},
	} {
		_, err := r.Resolve(c.path)
		if (err == nil) != c.ok {
			t.Errorf("Resolve(%q) err=%v, want ok=%v", c.path, err, c.ok)
		}
	}
}

func TestApplyPatch(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	env := &Env{Roots: Roots{Workspace: ws, Work: t.TempDir()}}
	run := func(patch string) error {
		args, _ := json.Marshal(map[string]string{"patch": patch})
		_, err := applyPatchTool.Run(context.Background(), env, args)
		return err
	}
	good := "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
	if err := run(good); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("f.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new.txt")); string(b) != "hello\nworld\n" {
		t.Fatalf("new.txt = %q", b)
	}
	// All or nothing: the second file's hunk fails, so the first is untouched.
	bad := "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-one\n+ONE\n--- a/new.txt\n+++ b/new.txt\n@@ -1,1 +1,1 @@\n-nope\n+x\n"
	if err := run(bad); err == nil {
		t.Fatal("bad patch applied")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("partial application: %q", b)
	}
	for _, p := range []string{"", "garbage", "--- a/f.txt\n", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"} {
		if err := run(p); err == nil {
			t.Errorf("patch %q accepted", p)
		}
	}
}

type fakeShell struct{}

func (fakeShell) Classify(src string) (bool, string) {
	if strings.HasPrefix(src, "git status") {
		return true, ""
	}
	return false, `"` + strings.Fields(src + " x")[0] + `" is not a read-only command`
}
func (fakeShell) RunReadOnly(ctx context.Context, roots Roots, src string) (string, int, bool, string, error) {
	return "clean", 0, false, "", nil
}
func (fakeShell) Run(ctx context.Context, dir, src string) (string, int, error) { return "", 0, nil }

func TestGate(t *testing.T) {
	reg := NewRegistry(DefaultTools()...)
	ws, work := t.TempDir(), t.TempDir()
	call := func(name, args string) ToolCall { return ToolCall{Name: name, Arguments: json.RawMessage(args)} }
	workPatch := `{"patch":"--- /dev/null\n+++ work://notes.md\n@@ -0,0 +1 @@\n+x\n"}`
	mixedPatch := `{"patch":"--- /dev/null\n+++ work://notes.md\n@@ -0,0 +1 @@\n+x\n--- /dev/null\n+++ b/src.go\n@@ -0,0 +1 @@\n+x\n"}`
	cases := []struct {
		plan bool
		mode Mode
		call ToolCall
		want Verdict
	}{
		{true, ModeFullAuto, call("read_file", `{"path":"a"}`), Run},
		{true, ModeFullAuto, call("grep", `{"pattern":"a"}`), Run},
		{true, ModeFullAuto, call("write_file", `{}`), Refuse},
		{true, ModeFullAuto, call("edit_file", `{}`), Refuse},
		{true, ModeFullAuto, call("apply_patch", workPatch), Run},
		{true, ModeFullAuto, call("apply_patch", mixedPatch), Refuse},
		{true, ModeFullAuto, call("apply_patch", `{"patch":"nonsense"}`), Refuse},
		{true, ModeFullAuto, call("bash", `{"command":"git status"}`), Run},
		{true, ModeFullAuto, call("bash", `{"command":"rm -rf /"}`), Refuse},
		{true, ModeFullAuto, call("exit_plan_mode", `{}`), Refuse},
		{false, ModeAsk, call("read_file", `{}`), Run},
		{false, ModeAsk, call("write_file", `{}`), Ask},
		{false, ModeAsk, call("bash", `{"command":"git status"}`), Run},
		{false, ModeAsk, call("bash", `{"command":"make"}`), Ask},
		{false, ModeEdits, call("write_file", `{}`), Run},
		{false, ModeEdits, call("bash", `{"command":"make"}`), Ask},
		{false, ModeFullAuto, call("bash", `{"command":"make"}`), Run},
		{false, ModeFullAuto, call("nope", `{}`), Refuse},
	}
	for _, c := range cases {
		g := Gate{Plan: c.plan, Mode: c.mode, Shell: fakeShell{}, Roots: Roots{Workspace: ws, Work: work}}
		d := g.Decide(reg.Get(c.call.Name), c.call)
		if d.Verdict != c.want {
			t.Errorf("plan=%v mode=%s %s %s: %v (%s), want %v", c.plan, c.mode, c.call.Name, c.call.Arguments, d.Verdict, d.Reason, c.want)
		}
		if d.Verdict == Refuse && c.plan && d.Code != CodePlanBlocked {
			t.Errorf("%s: code %q", c.call.Name, d.Code)
		}
	}
	// Without a shell, bash is refused in Plan.
	if d := (Gate{Plan: true}).Decide(reg.Get("bash"), call("bash", `{"command":"git status"}`)); d.Verdict != Refuse {
		t.Error("bash ran in Plan without a classifier")
	}
}

func TestScriptExhausted(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte(`[{"text":"héllo wörld, streamed"}]`), 0o644)
	s, err := LoadScript(f)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	resp, err := s.Stream(context.Background(), Request{}, func(d string) { chunks = append(chunks, d) })
	if err != nil || resp.Text != strings.Join(chunks, "") || len(chunks) < 2 {
		t.Fatalf("stream: %v %q %q", err, resp.Text, chunks)
	}
	if _, err := s.Stream(context.Background(), Request{}, func(string) {}); !errors.Is(err, ErrScriptExhausted) {
		t.Fatalf("want exhausted, got %v", err)
	}
	os.WriteFile(f, []byte(`{"not":"a list"}`), 0o644)
	if _, err := LoadScript(f); err == nil {
		t.Fatal("bad script accepted")
	}
}

func TestScriptsInTestdataLoad(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/scripts/*.json")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata/scripts")
	}
	for _, f := range files {
		s, err := LoadScript(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(s.steps) == 0 {
			t.Errorf("%s: empty script", f)
		}
	}
}
