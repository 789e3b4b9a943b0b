package bashclass

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// helperScript reports that it ran on three channels, so a helper is seen
// whether or not the sandbox lets it write or connect: it touches
// marks/NAME (NAME is the script's own name), prints a HELPER-RAN line on
// stderr (which reaches the command's output; the script's own text,
// which allowed commands may print, spells it differently), and sends the same line to
// the unix socket marks.sock outside the sandbox. Then it passes data
// through, so a helper that runs is visible but harmless.
const helperScript = `#!/bin/sh
n=$(basename "$0")
line="HELPER""-RAN $n"
touch "%[1]s/$n" 2>/dev/null
echo "$line" >&2
perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) and print $s "$ARGV[1]\n"' "%[1]s.sock" "$line" 2>/dev/null
if [ $# -gt 0 ] && [ -f "$1" ]; then cat "$1"; else cat; fi
`

// makeHostileRepo plants every helper of the spec in a fresh repository:
// repository config (core.pager, pager.*, core.fsmonitor, diff.external,
// diff.<drv>.textconv and .command via .gitattributes, diff.submodule=diff,
// gpg.program, alias.*, editors, credential and ssh helpers, man.viewer
// and help.format=web with a fake browser), hooks, a PATH-hijacking ./git
// and ./cat, untracked files named like options (-rf, --output=x), a
// symlink into /proc (CONTRIBUTING.md -> /proc/self/environ), and, with
// filter, a clean/smudge filter on *.txt.
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
	tool := func(name string) string { return h.tool(t, name) }
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
		"diff.submodule":             "diff",
		"status.submoduleSummary":    "true",
		"submodule.recurse":          "true",
		"man.viewer":                 "evilman",
		"man.evilman.cmd":            tool("man.viewer"),
		"help.format":                "web",
		"help.browser":               "evilbrowser",
		"web.browser":                "evilbrowser",
		"browser.evilbrowser.cmd":    tool("help.browser"),
		"browser.evilbrowser.path":   tool("help.browser.path"),
		"core.alternateRefsPrefixes": "refs/heads",
		"diff.hostile.cachetextconv": "false",
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
	// Files named like options, and a symlink to another process's
	// secrets, in the work tree.
	for _, name := range []string{"-rf", "--output=x", "-delete"} {
		writeFile(t, filepath.Join(h.repo, name), "looks like an option\n", 0o644)
	}
	if err := os.Symlink("/proc/self/environ", filepath.Join(h.repo, "CONTRIBUTING.md")); err != nil {
		t.Fatal(err)
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

// tool writes a helper script named name that leaves its marker.
func (h hostile) tool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(h.tools, name)
	writeFile(t, p, fmt.Sprintf(helperScript, h.marks), 0o755)
	return p
}

// clearMarkers removes the markers left by set-up commands.
func (h hostile) clearMarkers(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(h.marks)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(h.marks, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// listen accepts connections on the unix socket helpers report to (marks
// + ".sock", outside any sandbox) and returns a function giving what was
// heard since its last call.
func (h hostile) listen(t *testing.T) func() string {
	t.Helper()
	l, err := net.Listen("unix", h.marks+".sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var got strings.Builder
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(io.LimitReader(c, 1<<16))
				mu.Lock()
				got.Write(b)
				mu.Unlock()
			}()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		s := got.String()
		got.Reset()
		return s
	}
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

// gitClean runs git for test set-up with a minimal environment and every
// repository helper off, so that set-up itself runs no planted helper.
func gitClean(t *testing.T, dir string, args ...string) {
	t.Helper()
	full := append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "protocol.file.allow=always", "-c", "submodule.recurse=false"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + fixedPath, "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// makeHostileSubmodule adds to a hostile repository a submodule at
// vendor/mod whose own configuration is armed (pager, fsmonitor, external
// diff, textconv, clean/smudge/process filters on its dirty files, hooks),
// committed in a third commit so that log -p and show diff the gitlink,
// with the superproject set to diff.submodule=diff and submodule.recurse.
func makeHostileSubmodule(t *testing.T, h hostile) {
	t.Helper()
	mod := t.TempDir()
	gitClean(t, mod, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(mod, ".gitattributes"), "*.txt diff=hostile filter=evil\n*.md diff=hostile\n", 0o644)
	writeFile(t, filepath.Join(mod, "a.txt"), "sub one\n", 0o644)
	writeFile(t, filepath.Join(mod, "b.md"), "# sub\n", 0o644)
	gitClean(t, mod, "add", "-A")
	gitClean(t, mod, "commit", "-qm", "sub first")
	gitClean(t, h.repo, "submodule", "add", "-q", mod, "vendor/mod")
	gitClean(t, h.repo, "commit", "-qm", "add submodule")
	sub := filepath.Join(h.repo, "vendor/mod")
	for _, k := range []string{"core.pager", "core.fsmonitor", "diff.external", "diff.hostile.textconv",
		"diff.hostile.command", "filter.evil.clean", "filter.evil.smudge", "filter.evil.process",
		"gpg.program", "core.alternateRefsCommand", "pager.log", "pager.diff", "pager.status"} {
		gitClean(t, sub, "config", k, h.tool(t, "sub."+k))
	}
	gitClean(t, sub, "config", "filter.evil.required", "true")
	gitClean(t, sub, "config", "alias.status", "!"+h.tool(t, "sub.alias.status"))
	for _, hook := range []string{"post-checkout", "post-index-change", "reference-transaction", "pre-commit"} {
		writeFile(t, filepath.Join(h.repo, ".git/modules/vendor/mod/hooks", hook), fmt.Sprintf(helperScript, h.marks), 0o755)
	}
	// Dirty submodule files: anything that refreshes them runs the filter.
	writeFile(t, filepath.Join(sub, "a.txt"), "sub one\nchanged\n", 0o644)
	writeFile(t, filepath.Join(sub, "new.txt"), "untracked\n", 0o644)
}

// TestHostileFixtureOracle is the hostile-helper oracle of issue 13: it
// runs every runnable allowed row of the verdict table through the real
// runner (confined as in Plan) in a repository armed with helpers wired
// to marker files — the repository's own config, the environment, a
// submodule with its own armed config and dirty filtered files,
// diff.submodule=diff, man.viewer and help.format=web with a fake
// browser, files named like options and a symlink into /proc — and
// asserts that no helper ran and that the work tree, .git (with the
// submodule's git directory) and every mtime are unchanged. Only the
// repository-dependent git checks may refuse what Classify allowed, and
// only because of the submodule.
func TestHostileFixtureOracle(t *testing.T) {
	h := makeHostileRepo(t, false)
	makeHostileSubmodule(t, h)
	h.clearMarkers(t)
	heard := h.listen(t)
	before := snapshot(t, h.repo)
	// Unconfined, the policy and the git hardening stand alone; confined,
	// the sandbox is underneath them. Neither may let a helper run.
	for _, confine := range []bool{false, true} {
		r := &Runner{Dir: h.repo, Timeout: 20 * time.Second, noConfine: !confine}
		ran, refused := 0, 0
		for _, row := range verdictTable {
			if !row.allow || row.noRun {
				continue
			}
			res, err := r.Run(context.Background(), row.cmd)
			ran++
			if err != nil {
				t.Errorf("confine=%v: Run(%q): %v", confine, row.cmd, err)
			}
			if res.Refused {
				refused++
				if !strings.Contains(res.Reason, "submodule") {
					t.Errorf("confine=%v: Run(%q) refused at execution: %s", confine, row.cmd, res.Reason)
				}
			}
			if m := h.markers(t); len(m) > 0 {
				t.Fatalf("confine=%v: Run(%q) ran helpers %v; output:\n%s", confine, row.cmd, m, res.Output)
			}
			if bytes.Contains(res.Output, []byte("HELPER-RAN")) {
				t.Fatalf("confine=%v: Run(%q) ran a helper; output:\n%s", confine, row.cmd, res.Output)
			}
			if l := heard(); l != "" {
				t.Fatalf("confine=%v: Run(%q) ran a helper that reached the socket outside: %s", confine, row.cmd, l)
			}
			if d := diffSnapshots(before, snapshot(t, h.repo)); d != "" {
				t.Fatalf("confine=%v: Run(%q) changed the repository:\n%s", confine, row.cmd, d)
			}
		}
		t.Logf("confine=%v: ran %d allowed rows (%d refused at execution for the submodule): no helper ran, repository unchanged", confine, ran, refused)
	}

	// The fixture is armed: unhardened git in the same environment runs
	// the submodule's helpers and the man viewer (the browser of
	// help.format=web needs the HTML documentation, not installed here).
	for _, c := range [][]string{{"git", "status"}, {"git", "diff", "--submodule=diff", "HEAD~1"}, {"git", "-c", "help.format=man", "log", "--help"}} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = h.repo
		cmd.Run()
	}
	m := strings.Join(h.markers(t), " ")
	for _, w := range []string{"sub.core.fsmonitor", "man.viewer"} {
		if !strings.Contains(m, w) {
			t.Errorf("helper %s did not run under unhardened git (ran: %s); the oracle would not see it", w, m)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(heard(), "HELPER-RAN") {
		if time.Now().After(deadline) {
			t.Fatal("helpers run by unhardened git did not reach the socket; the oracle's socket channel is deaf")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
