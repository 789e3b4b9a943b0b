package bashclass

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfinement(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap is not installed (apt-get install bubblewrap)")
	}
	got := Confinement()
	if got != "bwrap" && !strings.HasPrefix(got, "none (bwrap does not work here") {
		t.Fatalf("Confinement() = %q", got)
	}
	t.Logf("Confinement() = %q", got)
	if got != "bwrap" {
		return
	}
	// Inside the sandbox the filesystem is read-only and there is no network.
	dir := t.TempDir()
	x := &executor{env: scrubEnv(nil, nil), bwrap: "/usr/bin/bwrap"}
	bw, _ := exec.LookPath("bwrap")
	x.bwrap = bw
	touch, _ := lookPath("touch")
	var out bytes.Buffer
	cmd := x.command(context.Background(), dir, touch, []string{"made"}, x.env)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err == nil {
		t.Errorf("touch inside bwrap succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Errorf("touch inside bwrap created a file")
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
		{src: "for a in -i; do sed -n 1p $a notes.txt; done", code: ExitRefused, reason: "would be read as an option"},
		{src: "echo ok; for c in --pre=cat; do rg $c x; done; echo after", out: "ok\n", code: ExitRefused, reason: "--pre"},
		{src: "for v in -v; do printf $v x y; done", code: ExitRefused, reason: "printf -v"},
		{src: "sort $IFS-o out notes.txt", code: ExitRefused, reason: "sort option -o"},
		{src: "sort -u${IFS}-o${IFS}out notes.txt", code: ExitRefused, reason: "sort option -o"},
		{src: "find . $IFS-delete", code: ExitRefused, reason: "find option -delete"},
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
		{"find *", "-delete", "find option -delete"},
		{"find . *", "-fprint", "find option -fprint"},
		{"sort *", "-o", "sort option -o"},
		{"sed -n 1p *", "-i.bak", "would be read as an option"},
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
			start := time.Now()
			res, err := r.Run(context.Background(), src)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Run(%q) took %v", src, d)
			}
			if !errors.Is(err, ErrTimeout) || res.ExitCode != ExitTimeout {
				t.Errorf("Run(%q) = exit %d, %v; want timeout", src, res.ExitCode, err)
			}
			if !bytes.Contains(res.Output, []byte("[timed out after")) {
				t.Errorf("Run(%q) output %q lacks the timeout marker", src, res.Output)
			}
			deadline := time.Now().Add(2 * time.Second)
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
		start := time.Now()
		res, err := r.Run(context.Background(), src)
		if err != nil {
			t.Errorf("Run(%q): %v", src, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Run(%q) took %v", src, d)
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

// TestBashOracle runs the allowed rows under real bash and under the
// Runner in a clean repository and compares output and exit status.
func TestBashOracle(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is not installed")
	}
	dir := makeRepo(t, "")
	env := scrubEnv(os.Environ(), nil)
	r := &Runner{Dir: dir, Timeout: 20 * time.Second}
	compared := 0
	for _, row := range verdictTable {
		if !row.allow || row.noRun || row.noBash {
			continue
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", row.cmd)
		cmd.Dir, cmd.Env = dir, env
		want, err := cmd.CombinedOutput()
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
