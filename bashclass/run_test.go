package bashclass

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"planbridge/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func TestConfinement(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap is not installed (apt-get install bubblewrap)")
	}
	got := Confinement()
	t.Logf("Confinement() = %q", got)
	if !strings.Contains(got, "landlock ABI") || !strings.Contains(got, "bwrap") {
		t.Fatalf("Confinement() = %q; want Landlock and bwrap on these machines", got)
	}
	// Inside the sandbox nothing can be written, even by a program the
	// policy would never run.
	dir := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{ReadRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	x := &executor{env: scrubEnv(nil, nil), sb: sb}
	touch, _ := lookPath("touch")
	var out bytes.Buffer
	cmd := x.command(context.Background(), dir, touch, []string{"made"}, x.env)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := waitStatus(context.Background(), cmd); err == nil {
		t.Errorf("touch inside the sandbox succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Errorf("touch inside the sandbox created a file")
	}
}

func runner(dir string) *Runner { return &Runner{Dir: dir, Timeout: 20 * time.Second} }

func TestRunBasics(t *testing.T) {
	dir := makeRepo(t, "")
	tests := []struct {
		src    string
		out    string
		code   int
		reason string
	}{
		{src: "echo hello", out: "hello\n"},
		{src: "cat < notes.txt | head -n 1", out: "a:1 x\n"},
		{src: "false", code: 1},
		{src: "ls nope 2>/dev/null", code: 2},
		{src: "cd sub && cat a.txt | wc -l", out: "2\n"},
		{src: "for f in sub/*.txt; do head -n 1 $f; done", out: "1 one\n1 uno\n"},
		{src: "rm -rf sub", code: ExitRefused, reason: `"rm" is not a read-only command`},
		{src: "echo x > out", code: ExitRefused, reason: "redirection"},
		// Refused at execution: the expanded argv carries the option.
		{src: "for o in -o; do sort $o out notes.txt; done", code: ExitRefused, reason: "sort option -o"},
		{src: "for a in -i; do sed -n 1p $a notes.txt; done", code: ExitRefused, reason: "sed option -i"},
		{src: "echo ok; for c in --pre=cat; do rg $c x; done; echo after", out: "ok\n", code: ExitRefused, reason: "--pre"},
		{src: "for v in -v; do printf $v x y; done", code: ExitRefused, reason: "printf -v"},
		{src: "sort $IFS-o out notes.txt", code: ExitRefused, reason: "sort option -o"},
		{src: "sort -u${IFS}-o${IFS}out notes.txt", code: ExitRefused, reason: "sort option -"},
		{src: "find . $IFS-delete", code: ExitRefused, reason: "find primary -delete"},
		{src: "for o in --output=x --ext-diff; do git log $o; done", code: ExitRefused, reason: "--output"},
	}
	for _, tt := range tests {
		res, err := runner(dir).Run(context.Background(), tt.src)
		if err != nil {
			t.Errorf("Run(%q): %v", tt.src, err)
			continue
		}
		if res.ExitCode != tt.code || string(res.Output) != tt.out && tt.out != "" {
			t.Errorf("Run(%q) = exit %d, output %q; want %d, %q", tt.src, res.ExitCode, res.Output, tt.code, tt.out)
		}
		if tt.reason != "" && (!res.Refused || !strings.Contains(res.Reason, tt.reason)) {
			t.Errorf("Run(%q) refused=%v reason %q, want reason containing %q", tt.src, res.Refused, res.Reason, tt.reason)
		}
		if tt.reason == "" && res.Refused {
			t.Errorf("Run(%q) refused: %s", tt.src, res.Reason)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("a refused command created a file")
	}
}

// TestRunGlobExpandsToRefusedOption is the runtime check of the spec: the
// static verdict allows "find *", but in a directory holding a file named
// -delete the expanded argv is refused before find runs.
func TestRunGlobExpandsToRefusedOption(t *testing.T) {
	for _, tt := range []struct{ src, file, reason string }{
		{"find *", "-delete", "find primary -delete"},
		{"find . *", "-fprint", "find primary -fprint"},
		{"sort *", "-o", "sort option -o"},
		{"sed -n 1p *", "-i.bak", "sed option -i"},
		{"rg x *", "--pre=sh", "--pre"},
		{"git log *", "--output=x", "--output"},
		{"uniq *", "b", "second operand"},
	} {
		dir := t.TempDir()
		for _, name := range []string{tt.file, "keep"} {
			writeFile(t, filepath.Join(dir, name), "data\n", 0o644)
		}
		if v := Classify(tt.src); !v.Allow {
			t.Fatalf("Classify(%q) denied: %s", tt.src, v.Reason)
		}
		res, err := runner(dir).Run(context.Background(), tt.src)
		if err != nil {
			t.Fatalf("Run(%q): %v", tt.src, err)
		}
		if !res.Refused || res.ExitCode != ExitRefused || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("Run(%q) with file %q = refused %v, exit %d, reason %q; want refusal %q",
				tt.src, tt.file, res.Refused, res.ExitCode, res.Reason, tt.reason)
		}
		for _, name := range []string{tt.file, "keep"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("Run(%q): %v", tt.src, err)
			}
		}
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestRunTimeoutKillsChildren(t *testing.T) {
	for _, confine := range []bool{true, false} {
		dir := t.TempDir()
		tag := filepath.Join(dir, "follow-me")
		writeFile(t, tag, "x\n", 0o644)
		r := &Runner{Dir: dir, Timeout: 700 * time.Millisecond, noConfine: !confine}
		for _, src := range []string{
			"tail -f " + tag,
			"tail -f " + tag + " | cat | cat",
			"while true; do true; done",
			"while true; do cat " + tag + " >/dev/null; done",
		} {
			res, err := r.Run(context.Background(), src)
			if !errors.Is(err, ErrTimeout) || res.ExitCode != ExitTimeout {
				t.Errorf("Run(%q) = exit %d, %v; want timeout", src, res.ExitCode, err)
			}
			if !bytes.Contains(res.Output, []byte("[timed out after")) {
				t.Errorf("Run(%q) output %q lacks the timeout marker", src, res.Output)
			}
			deadline := time.Now().Add(30 * time.Second) // a hang guard, not a timing check
			for len(processesWith(t, tag)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if pids := processesWith(t, tag); len(pids) > 0 {
				t.Errorf("Run(%q) (confine=%v) left processes %v", src, confine, pids)
			}
		}
	}
}

func TestRunOutputCap(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{"seq 1 100000", "cat /dev/zero", "while true; do echo yes; done"} {
		r := &Runner{Dir: dir, MaxOutput: 1000, Timeout: 10 * time.Second}
		res, err := r.Run(context.Background(), src)
		if err != nil {
			t.Errorf("Run(%q): %v", src, err)
		}
		// Stopped by the output limit, not by the timeout.
		if res.ExitCode == ExitTimeout || bytes.Contains(res.Output, []byte("[timed out after")) {
			t.Errorf("Run(%q) ran into its timeout: exit %d", src, res.ExitCode)
		}
		marker := "[output truncated at 1000 bytes]\n"
		if !res.Truncated || !bytes.HasSuffix(res.Output, []byte(marker)) || len(res.Output) > 1000+len(marker)+1 {
			t.Errorf("Run(%q) = truncated %v, %d bytes ending %q", src, res.Truncated, len(res.Output), res.Output[max(0, len(res.Output)-40):])
		}
	}
	res, err := (&Runner{Dir: dir, MaxOutput: 1000}).Run(context.Background(), "seq 1 10")
	if err != nil || res.Truncated || string(res.Output) != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" {
		t.Errorf("small output: %q, truncated %v, %v", res.Output, res.Truncated, err)
	}
}

func TestRunEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"GIT_DIR": "/tmp/evil", "PAGER": "evil", "LESS": "x", "LD_PRELOAD": "/nonexistent.so",
		"BASH_ENV": "/tmp/evil", "BASH_FUNC_ls%%": "() { id; }", "PYTHONPATH": "/tmp", "SSH_ASKPASS": "x",
		"RIPGREP_CONFIG_PATH": "/tmp/x", "IFS": "o", "CDPATH": "/", "SECRET_TOKEN": "x",
	} {
		t.Setenv(k, v)
	}
	r := &Runner{Dir: t.TempDir(), Env: []string{"EXTRA=1", "GIT_WORK_TREE=/", "PATH=/tmp", "PAGER=x"}}
	res, err := r.Run(context.Background(), "jq -r -n 'env | keys[]'")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v, exit %d: %s", err, res.ExitCode, res.Output)
	}
	keys := strings.Fields(string(res.Output))
	for _, k := range keys {
		switch {
		case k == "PATH", k == "HOME", k == "LANG", k == "USER", k == "LOGNAME", k == "TZ", k == "PWD", k == "TMPDIR",
			strings.HasPrefix(k, "LC_"), k == "EXTRA":
		default:
			t.Errorf("environment variable %s reached the command", k)
		}
	}
	res, _ = r.Run(context.Background(), "echo $PATH; echo foo")
	if string(res.Output) != fixedPath+"\nfoo\n" {
		t.Errorf("PATH/IFS in the shell: %q", res.Output)
	}
}

func TestOpenHandlerRefusesWrites(t *testing.T) {
	x := &executor{}
	path := filepath.Join(t.TempDir(), "new")
	for _, flag := range []int{os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR, os.O_WRONLY | os.O_APPEND} {
		if f, err := x.open(context.Background(), path, flag, 0o644); !errors.Is(err, errRefused) {
			t.Errorf("open(%q, %#x) = %v, %v; want refusal", path, flag, f, err)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("refused open created the file")
	}
	f, err := x.open(context.Background(), os.DevNull, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("open /dev/null for writing: %v", err)
	}
	f.Close()
}

// TestGitHelperRepos checks that status, diff, blame and describe refuse
// in repositories with a filter driver or a submodule, and that commands
// that do not touch the working tree still run.
func TestGitHelperRepos(t *testing.T) {
	filtered := makeRepo(t, "*.txt filter=evil\n")
	gitT(t, filtered, "config", "filter.evil.clean", "false")
	unusedFilter := makeRepo(t, "")
	gitT(t, unusedFilter, "config", "filter.lfs.clean", "false")
	gitlink := makeRepo(t, "")
	head := strings.TrimSpace(gitT(t, gitlink, "rev-parse", "HEAD"))
	gitT(t, gitlink, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/mod")
	modules := makeRepo(t, "")
	writeFile(t, filepath.Join(modules, ".gitmodules"), "[submodule \"x\"]\n\tpath = x\n", 0o644)
	gitT(t, modules, "add", ".gitmodules")
	tests := []struct {
		repo, src, reason string
	}{
		{filtered, "git status", `filter "evil"`},
		{filtered, "git diff", `filter "evil"`},
		{filtered, "git -C sub diff --stat", `filter "evil"`},
		{filtered, "git blame notes.txt", `filter "evil"`},
		{filtered, "git log --oneline -1", ""},
		{unusedFilter, "git status --short", ""},
		{gitlink, "git status", "submodule at \"vendor/mod\""},
		{gitlink, "git diff", "submodule"},
		{gitlink, "git ls-files -s", ""},
		{modules, "git status", ".gitmodules"},
	}
	for _, tt := range tests {
		res, err := runner(tt.repo).Run(context.Background(), tt.src)
		if err != nil {
			t.Errorf("Run(%q): %v", tt.src, err)
			continue
		}
		if tt.reason == "" {
			if res.Refused || res.ExitCode != 0 {
				t.Errorf("Run(%q) = refused %v (%s), exit %d: %s", tt.src, res.Refused, res.Reason, res.ExitCode, res.Output)
			}
			continue
		}
		if !res.Refused || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("Run(%q) = refused %v, reason %q; want %q", tt.src, res.Refused, res.Reason, tt.reason)
		}
	}
}

// TestGitDiffMergesConfig: with log.diffMerges=remerge in the
// repository's config, git log -m and --diff-merges=on would re-merge in a
// temporary object directory git creates in .git/objects (a write the
// sandbox refuses, so the command failed). The hardening pins the default
// to separate, so -m prints and writes nothing.
func TestGitDiffMergesConfig(t *testing.T) {
	dir := makeRepo(t, "")
	tree := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD^{tree}"))
	merge := strings.TrimSpace(gitT(t, dir, "commit-tree", tree, "-p", "HEAD", "-p", "HEAD~1", "-m", "merge"))
	gitT(t, dir, "update-ref", "refs/heads/main", merge)
	gitT(t, dir, "config", "log.diffMerges", "remerge")
	for _, src := range []string{"git log -m -p -1 --format=%s", "git show -m --format=%s", "git log --diff-merges=on -1 --format=%s"} {
		res, err := runner(dir).Run(context.Background(), src)
		if err != nil {
			t.Fatalf("Run(%q): %v", src, err)
		}
		if res.Refused || res.ExitCode != 0 || !strings.HasPrefix(string(res.Output), "merge\n") {
			t.Errorf("Run(%q) = refused %v (%s), exit %d: %s", src, res.Refused, res.Reason, res.ExitCode, res.Output)
		}
	}
}

// TestHostileHelpersOracle runs every runnable allowed row of the verdict
// table in repositories armed with hostile helpers, with and without bwrap
// (without it, only the policy and git hardening stand in the way), and
// checks that no helper ran and that no byte or mtime changed in the
// repository and its .git.
func TestHostileHelpersOracle(t *testing.T) {
	for _, filter := range []bool{false, true} {
		h := makeHostileRepo(t, filter)
		before := snapshot(t, h.repo)
		for _, confine := range []bool{false, true} {
			r := &Runner{Dir: h.repo, Timeout: 20 * time.Second, noConfine: !confine}
			ran := 0
			for _, row := range verdictTable {
				if !row.allow || row.noRun {
					continue
				}
				res, err := r.Run(context.Background(), row.cmd)
				ran++
				if err != nil {
					t.Errorf("filter=%v confine=%v: Run(%q): %v", filter, confine, row.cmd, err)
				}
				if res.Refused {
					// Only the repository-dependent git checks may refuse what
					// Classify allowed, and only where a filter is configured.
					if !filter || !strings.Contains(res.Reason, "filter") {
						t.Errorf("filter=%v confine=%v: Run(%q) refused at execution: %s", filter, confine, row.cmd, res.Reason)
					}
				}
				if m := h.markers(t); len(m) > 0 {
					t.Fatalf("filter=%v confine=%v: Run(%q) ran helpers %v; output:\n%s", filter, confine, row.cmd, m, res.Output)
				}
				if d := diffSnapshots(before, snapshot(t, h.repo)); d != "" {
					t.Fatalf("filter=%v confine=%v: Run(%q) changed the repository:\n%s", filter, confine, row.cmd, d)
				}
			}
			t.Logf("filter=%v confine=%v: ran %d allowed rows, no helper ran, repository unchanged", filter, confine, ran)
		}
		// The helpers are armed: unhardened tools in the same environment
		// run them (this changes the repository, so it comes last).
		for _, c := range [][]string{{"git", "diff"}, {"git", "status"}, {"rg", "alpha"}, {"bash", "-c", "true"}} {
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Dir = h.repo
			cmd.Run()
		}
		m := strings.Join(h.markers(t), " ")
		// A sourced BASH_ENV script names its marker after $0, "bash".
		want := []string{"diff.command", "core.fsmonitor", "post-index-change", "rg.pre", "bash"}
		if filter {
			want = append(want, "filter.clean")
		}
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Errorf("filter=%v: helper %s did not run under the unhardened tool (ran: %s); the oracle would not see it", filter, w, m)
			}
		}
	}
}

// oracleDiffers are rows where the Runner differs from bash on purpose.
var oracleDiffers = map[string]string{
	"cd": "cd with no operand goes to $HOME, which is outside the read roots",
}

// TestBashOracle runs the allowed rows under real bash and under the
// Runner in a clean repository and compares output and exit status. bash
// runs inside the same sandbox, so both see the same files (a private
// /tmp, no temporary files): the oracle checks the interpreter, the
// confinement has its own tests.
func TestBashOracle(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is not installed")
	}
	dir := makeRepo(t, "")
	env := scrubEnv(os.Environ(), nil)
	r := &Runner{Dir: dir, Timeout: 20 * time.Second}
	sb, err := sandbox.New(sandbox.Config{ReadRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, row := range verdictTable {
		if !row.allow || row.noRun || row.noBash || oracleDiffers[row.cmd] != "" {
			continue
		}
		cmd, err := sb.Command(context.Background(), dir, []string{"bash", "--norc", "--noprofile", "-c", row.cmd}, env)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err = sandbox.Run(cmd)
		want := buf.Bytes()
		wantCode := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			wantCode = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bash -c %q: %v", row.cmd, err)
		}
		res, err := r.Run(context.Background(), row.cmd)
		if err != nil {
			t.Errorf("Run(%q): %v", row.cmd, err)
			continue
		}
		compared++
		if res.ExitCode != wantCode || !bytes.Equal(res.Output, want) {
			t.Errorf("%q:\nbash:   exit %d %q\nrunner: exit %d %q", row.cmd, wantCode, want, res.ExitCode, res.Output)
		}
	}
	t.Logf("compared %d rows with bash", compared)
}

// TestRunContainsInProcessReads attacks the reads the interpreter itself
// makes (redirections, globs, cd, test) and the reads of the programs it
// starts: the planbridge process's environment, stdin and other files
// outside the workspace never reach the output, and the memory and
// spooling hogs end as clean failures.
func TestRunContainsInProcessReads(t *testing.T) {
	const key = "sk-planbridge-fake-key-4c0ffee"
	t.Setenv("OPENAI_API_KEY", key)
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), key+"\n", 0o644)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "sibling.txt"), key+"\n", 0o644)
	dir := makeRepo(t, "")
	for name, target := range map[string]string{
		"CONTRIBUTING.md": "/proc/self/environ",
		"env-of-parent":   "/proc/" + fmt.Sprint(os.Getpid()) + "/environ",
		"stdin-link":      "/dev/stdin",
		"fd0":             "/proc/self/fd/0",
		"sibling":         filepath.Join(outside, "sibling.txt"),
		"ssh":             filepath.Join(home, ".ssh"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{Dir: dir, Timeout: 20 * time.Second, Limits: sandbox.Limits{AddressSpace: 256 << 20}}
	for _, tt := range []struct {
		src    string
		reason string // "" when a clean failure (no refusal) is the containment
		mayRun bool   // the program reads only its own sandboxed self
	}{
		{"cat < /proc/self/environ", "/proc/self/environ", false},
		// cat's own scrubbed environment, in its own pid namespace.
		{"cat /proc/self/environ", "", true},
		{"cat < /proc/" + fmt.Sprint(os.Getpid()) + "/environ", "environ", false},
		{"cat /proc/" + fmt.Sprint(os.Getpid()) + "/environ", "", false},
		{"cat < /proc/thread-self/environ", "thread-self", false},
		{"cat < /dev/stdin", "/dev/stdin", false},
		{"cat < /dev/fd/0", "/dev/fd/0", false},
		{"cat /dev/fd/0", "", true}, // cat's stdin: /dev/null
		{"cat < CONTRIBUTING.md", "CONTRIBUTING.md", false},
		{"cat CONTRIBUTING.md", "", true}, // cat's own environment
		{"head -c 1000 env-of-parent", "", false},
		{"cat < env-of-parent", "env-of-parent", false},
		{"cat < stdin-link", "stdin-link", false},
		{"cat < fd0", "fd0", false},
		{"cat < sibling", "sibling", false},
		{"cat sibling", "", false},
		{"cat ssh/id_ed25519", "", false},
		{"cat < ssh/id_ed25519", "ssh/id_ed25519", false},
		{"cat ~/.ssh/id_ed25519", "", false},
		{"cat " + outside + "/*", "", false},
		{"cd " + outside + " && cat sibling.txt", "", false},
		{"cd /proc/self && cat environ", "", false},
		{"for f in /proc/self/*; do echo $f; done", "", false},
		{"grep -r sk- " + outside + " " + home, "", false},
		{"rg sk- " + outside + " " + home, "", false},
		{"sort /dev/zero", "", false},
		{"cat /dev/zero | tac", "", false},
	} {
		res, err := r.Run(context.Background(), tt.src)
		if err != nil && !errors.Is(err, ErrTimeout) {
			t.Errorf("Run(%q): %v", tt.src, err)
		}
		if bytes.Contains(res.Output, []byte(key)) || bytes.Contains(res.Output, []byte("OPENAI_API_KEY")) {
			t.Errorf("Run(%q) leaked the secret:\n%.500s", tt.src, res.Output)
		}
		if tt.reason != "" {
			if !res.Refused || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("Run(%q) = refused %v, reason %q, exit %d; want a refusal naming %q\n%.300s", tt.src, res.Refused, res.Reason, res.ExitCode, tt.reason, res.Output)
			}
			continue
		}
		if res.ExitCode == 0 && !tt.mayRun && !strings.HasPrefix(tt.src, "for ") {
			t.Errorf("Run(%q) succeeded:\n%.300s", tt.src, res.Output)
		}
		if errors.Is(err, ErrTimeout) {
			t.Errorf("Run(%q) ran into the timeout instead of a limit", tt.src)
		}
	}
	// Reading inside the workspace still works, through symlinks too.
	if err := os.Symlink("notes.txt", filepath.Join(dir, "inside-link")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), "cat < inside-link | head -n 1; cd sub && cat a.txt | wc -l; git log --format=%s | head -n 1")
	if err != nil || res.Refused || !strings.HasPrefix(string(res.Output), "a:1 x\n2\n") {
		t.Errorf("workspace reads: %v, refused %v (%s):\n%s", err, res.Refused, res.Reason, res.Output)
	}
}

// TestRunGlobBomb expands globs over a wide tree: the budget refuses the
// program, and nothing keeps running after Run.
func TestRunGlobBomb(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 60; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i))
		for j := 0; j < 60; j++ {
			if err := os.MkdirAll(filepath.Join(d, fmt.Sprintf("e%02d", j)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := goroutines()
	r := &Runner{Dir: dir, Timeout: 20 * time.Second}
	res, err := r.Run(context.Background(), "echo */*/*/*/*/*/* */*/../*/*/../*/*/../*/* | wc -c")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Refused || !strings.Contains(res.Reason, "glob expansion") {
		t.Errorf("glob bomb: refused %v, reason %q, exit %d", res.Refused, res.Reason, res.ExitCode)
	}
	if after := goroutinesBeyond(len(before)); after != nil {
		t.Errorf("goroutines left after Run:\n%s", strings.Join(after, "\n\n"))
	}
}

// TestRunNoGoroutineOutlivesRun times out programs that keep the
// interpreter busy in every way it can be (external programs in a
// pipeline, an in-process loop, a glob over a deep tree) and checks that
// when Run returns not one goroutine it started is left.
func TestRunNoGoroutineOutlivesRun(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "x\n", 0o644)
	deep := dir
	for i := 0; i < 30; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Dir: dir, Timeout: 300 * time.Millisecond}
	before := goroutines()
	for _, src := range []string{
		"tail -f f | cat | cat",
		"while true; do true; done",
		"while true; do cat f | cat >/dev/null; done",
		"while true; do echo d/*/*/*/*/*/*/*/*/*/*/*/*/* >/dev/null; done",
		"cat f; tail -f f",
	} {
		res, err := r.Run(context.Background(), src)
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("Run(%q) = %v (exit %d, refused %q); want a timeout", src, err, res.ExitCode, res.Reason)
		}
		if after := goroutinesBeyond(len(before)); after != nil {
			t.Errorf("Run(%q) left goroutines:\n%s", src, strings.Join(after, "\n\n"))
		}
	}
}

// goroutinesBeyond returns the goroutine stacks when there are more than n
// of them, nil otherwise. A goroutine that has delivered its last result
// (os/exec's context watcher, after Wait) may still be on its way out:
// let the scheduler run a few times before judging. A goroutine still
// working (a glob walking a tree) stays and is reported.
func goroutinesBeyond(n int) []string {
	var g []string
	for i := 0; i < 50; i++ {
		if g = goroutines(); len(g) <= n {
			return nil
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return g
}

// goroutines returns the stacks of all goroutines but the caller's.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && !strings.Contains(g, "testing.tRunner") && !strings.Contains(g, "testing.(*T).Run") {
			out = append(out, g)
		}
	}
	return out
}

// TestRunConcurrent runs several programs at once through one Runner: each
// gets its own sandbox (and cgroup), and each sees only its own output.
func TestRunConcurrent(t *testing.T) {
	dir := makeRepo(t, "")
	r := runner(dir)
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			want := fmt.Sprintf("run %d\n", i)
			res, err := r.Run(context.Background(), fmt.Sprintf("echo run %d | cat | head -n 1", i))
			if err != nil || string(res.Output) != want {
				errs <- fmt.Sprintf("run %d: %v, %q", i, err, res.Output)
				return
			}
			errs <- ""
		}(i)
	}
	for i := 0; i < 8; i++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
