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

// TestReadToolsObeyTheReadPolicy drives read_file, list_dir and grep at
// everything outside the one read policy — absolute paths, symlinks into
// /proc, $HOME, a sibling project — and at a configured read root, which
// they may read, while writes stay confined to the workspace.
func TestReadToolsObeyTheReadPolicy(t *testing.T) {
	const secret = "sk-agent-read-policy-secret"
	t.Setenv("OPENAI_API_KEY", secret)
	ws, work, sibling, extra := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(sibling, "s.txt"), []byte(secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(extra, "docs.txt"), []byte("reference docs\n"), 0o644)
	for name, target := range map[string]string{
		"CONTRIBUTING.md": "/proc/self/environ",
		"stdin":           "/dev/stdin",
		"fd0":             "/proc/self/fd/0",
		"sib":             sibling,
		"sibfile":         filepath.Join(sibling, "s.txt"),
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := &Env{Roots: Roots{Workspace: ws, Work: work, ReadRoots: []string{extra}}}
	call := func(tool *Tool, args map[string]string) (string, error) {
		b, _ := json.Marshal(args)
		return tool.Run(context.Background(), env, b)
	}
	for _, p := range []string{"CONTRIBUTING.md", "stdin", "fd0", "sibfile", "sib/s.txt", "/proc/self/environ",
		filepath.Join(sibling, "s.txt"), "/etc/shadow", "../" + filepath.Base(sibling) + "/s.txt", "/dev/stdin"} {
		out, err := call(readFileTool, map[string]string{"path": p})
		if err == nil || strings.Contains(out, secret) {
			t.Errorf("read_file(%q) = %q, %v; want a refusal", p, out, err)
		} else if !errors.Is(err, ErrOutsideWorkspace) && !os.IsNotExist(err) {
			t.Errorf("read_file(%q): %v; want ErrOutsideWorkspace", p, err)
		}
	}
	for _, p := range []string{"sib", sibling, "/proc/self", "/"} {
		if out, err := call(listDirTool, map[string]string{"path": p}); err == nil {
			t.Errorf("list_dir(%q) = %q; want a refusal", p, out)
		}
		if out, err := call(grepTool, map[string]string{"pattern": "sk-", "path": p}); err == nil || strings.Contains(out, secret) {
			t.Errorf("grep(%q) = %q, %v; want a refusal", p, out, err)
		}
	}
	if out, err := call(grepTool, map[string]string{"pattern": "sk-"}); err != nil || strings.Contains(out, secret) {
		t.Errorf("grep over the workspace followed a symlink out: %q, %v", out, err)
	}
	// The configured read root and the workspace read; writes do not
	// reach the read root.
	if out, err := call(readFileTool, map[string]string{"path": filepath.Join(extra, "docs.txt")}); err != nil || out != "reference docs\n" {
		t.Errorf("read_file(read root) = %q, %v", out, err)
	}
	if out, err := call(readFileTool, map[string]string{"path": "a.txt"}); err != nil || out != "alpha\n" {
		t.Errorf("read_file(a.txt) = %q, %v", out, err)
	}
	if _, err := call(writeFileTool, map[string]string{"path": filepath.Join(extra, "docs.txt"), "content": "x"}); err == nil {
		t.Errorf("write_file reached a read root")
	}
}
