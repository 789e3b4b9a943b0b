package bashclass

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitT runs git in dir for test setup, failing the test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2020-01-01T00:00:00Z", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// makeRepo builds the test repository the verdict table's rows refer to:
// two commits, a tag, a second branch, a modified tracked file and an
// untracked one. attrs is the committed .gitattributes content.
func makeRepo(t *testing.T, attrs string) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "config", "user.name", "Test")
	gitT(t, dir, "config", "user.email", "test@example.com")
	writeFile(t, filepath.Join(dir, "README.md"), "# readme\nalpha beta\nTODO: more\n", 0o644)
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {}\n", 0o644)
	writeFile(t, filepath.Join(dir, "notes.txt"), "a:1 x\nb:2 y\nc:3 z\n", 0o644)
	writeFile(t, filepath.Join(dir, "sub/a.txt"), "1 one\n2 two\n", 0o644)
	writeFile(t, filepath.Join(dir, "sub/b.txt"), "1 uno\n3 tres\n", 0o644)
	writeFile(t, filepath.Join(dir, "data.json"), `{"name":"fixture","items":["x","y"]}`+"\n", 0o644)
	if attrs != "" {
		writeFile(t, filepath.Join(dir, ".gitattributes"), attrs, 0o644)
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	writeFile(t, filepath.Join(dir, "notes.txt"), "a:1 x\nb:2 y\nc:3 z\nd:4 w\n", 0o644)
	gitT(t, dir, "commit", "-q", "-am", "second")
	gitT(t, dir, "tag", "-a", "v1", "-m", "v1")
	gitT(t, dir, "branch", "feature")
	writeFile(t, filepath.Join(dir, "notes.txt"), "a:1 x\nb:2 y\nc:3 z\nd:4 w\ne:5 v\n", 0o644)
	writeFile(t, filepath.Join(dir, "untracked.txt"), "new\n", 0o644)
	return dir
}

// hostile describes a repository armed with helper programs that each
// leave a marker file in marks when run.
type hostile struct {
	repo, tools, marks string
}

// helperScript touches marks/NAME (NAME is the script's own name) and then
// passes data through, so a helper that runs is visible but harmless.
const helperScript = `#!/bin/sh
touch "%s/$(basename "$0")"
if [ $# -gt 0 ] && [ -f "$1" ]; then cat "$1"; else cat; fi
`

// makeHostileRepo plants every helper of the spec in a fresh repository:
// repository config (core.pager, pager.*, core.fsmonitor, diff.external,
// diff.<drv>.textconv and .command via .gitattributes, gpg.program,
// alias.*, editors, credential and ssh helpers), hooks, a PATH-hijacking
// ./git and ./cat, and, with filter, a clean/smudge filter on *.txt.
// Helpers named in the environment (GIT_EXTERNAL_DIFF, PAGER, BASH_ENV,
// GIT_CONFIG_*, RIPGREP_CONFIG_PATH, …) are set with t.Setenv.
func makeHostileRepo(t *testing.T, filter bool) hostile {
	t.Helper()
	h := hostile{tools: t.TempDir(), marks: t.TempDir()}
	attrs := "*.txt diff=hostile\n*.md diff=hostile\n*.go diff=hostile\n"
	if filter {
		attrs += "*.txt filter=evil\n"
	}
	h.repo = makeRepo(t, attrs)
	tool := func(name string) string {
		p := filepath.Join(h.tools, name)
		writeFile(t, p, fmt.Sprintf(helperScript, h.marks), 0o755)
		return p
	}
	cfg := map[string]string{
		"core.pager":                 tool("core.pager"),
		"core.fsmonitor":             tool("core.fsmonitor"),
		"core.editor":                tool("core.editor"),
		"core.sshCommand":            tool("core.sshCommand"),
		"core.askPass":               tool("core.askPass"),
		"core.alternateRefsCommand":  tool("core.alternateRefsCommand"),
		"sequence.editor":            tool("sequence.editor"),
		"credential.helper":          "!" + tool("credential.helper"),
		"diff.external":              tool("diff.external"),
		"diff.hostile.textconv":      tool("diff.textconv"),
		"diff.hostile.command":       tool("diff.command"),
		"gpg.program":                tool("gpg.program"),
		"gpg.ssh.program":            tool("gpg.ssh.program"),
		"log.showSignature":          "true",
		"alias.status":               "!" + tool("alias.status"),
		"alias.x":                    "!" + tool("alias.x"),
		"alias.st":                   "!" + tool("alias.st"),
		"status.showUntrackedFiles":  "all",
		"core.untrackedCache":        "true",
		"uploadpack.packObjectsHook": tool("packObjectsHook"),
	}
	for _, p := range []string{"log", "diff", "show", "status", "branch", "tag", "grep", "blame", "config", "shortlog", "describe", "rev-list", "for-each-ref", "ls-files"} {
		cfg["pager."+p] = tool("pager." + p)
	}
	if filter {
		cfg["filter.evil.clean"] = tool("filter.clean")
		cfg["filter.evil.smudge"] = tool("filter.smudge")
		cfg["filter.evil.required"] = "true"
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		gitT(t, h.repo, "config", k, cfg[k])
	}
	for _, hook := range []string{"pre-commit", "post-checkout", "post-index-change", "reference-transaction",
		"post-rewrite", "pre-auto-gc", "post-merge", "fsmonitor-watchman", "pre-push", "post-commit"} {
		writeFile(t, filepath.Join(h.repo, ".git/hooks", hook), fmt.Sprintf(helperScript, h.marks), 0o755)
	}
	// Programs named like allowed commands, in the working directory.
	for _, name := range []string{"git", "cat", "ls"} {
		writeFile(t, filepath.Join(h.repo, name), fmt.Sprintf(helperScript, h.marks), 0o755)
	}
	rgConfig := filepath.Join(h.tools, "rgconfig")
	writeFile(t, rgConfig, "--pre="+tool("rg.pre")+"\n", 0o644)
	for k, v := range map[string]string{
		"GIT_EXTERNAL_DIFF":   tool("env.GIT_EXTERNAL_DIFF"),
		"GIT_PAGER":           tool("env.GIT_PAGER"),
		"PAGER":               tool("env.PAGER"),
		"BASH_ENV":            tool("env.BASH_ENV"),
		"ENV":                 tool("env.ENV"),
		"GIT_SSH_COMMAND":     tool("env.GIT_SSH_COMMAND"),
		"GIT_ASKPASS":         tool("env.GIT_ASKPASS"),
		"GIT_EDITOR":          tool("env.GIT_EDITOR"),
		"LESSOPEN":            "|" + tool("env.LESSOPEN") + " %s",
		"GIT_CONFIG_COUNT":    "1",
		"GIT_CONFIG_KEY_0":    "core.pager",
		"GIT_CONFIG_VALUE_0":  tool("env.GIT_CONFIG"),
		"RIPGREP_CONFIG_PATH": rgConfig,
		"PYTHONSTARTUP":       tool("env.PYTHONSTARTUP"),
	} {
		t.Setenv(k, v)
	}
	return h
}

// markers lists the helpers that ran.
func (h hostile) markers(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(h.marks)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// snapshot records every file and directory under dir: type, mode, size,
// modification time and, for files, a hash of the content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			entry += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		snap[path] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// diffSnapshots describes how after differs from before, or "".
func diffSnapshots(before, after map[string]string) string {
	var out []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		} else if a != b {
			out = append(out, fmt.Sprintf("changed %s: %s -> %s", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "added "+p)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
