package bashclass

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArgvDifferential generates argvs from the options of a program —
// allowed and refused ones, short, long, abbreviated and stuck, values
// such as "--" and words that look like options — and runs every argv the
// policy allows with the real program, unconfined and without the launch's
// safety switches, in a scratch repository holding a marker helper. No
// allowed argv may write or change a file or run the helper: a model that
// read a word differently from the program (a value taken as an option,
// an operand taken as a value) would show here.
func TestArgvDifferential(t *testing.T) {
	dir := makeRepo(t, "")
	mk := filepath.Join(dir, "mk")
	writeFile(t, mk, "#!/bin/sh\ntouch \"$(dirname \"$0\")/MARKER\"\ncat\n", 0o755)
	gitT(t, dir, "add", "mk")
	gitT(t, dir, "commit", "-qm", "mk")
	before := snapshot(t, dir)
	common := []string{"--", "-", "x", "out", "-ofoo", "--output=foo", "README.md", "notes.txt", "./mk", "-Omk", "--pre=./mk",
		"--end-of-options", "-e", "-i", "1", "w foo", "s/a/b/w foo", "e ./mk", "-n", "-r", "-c"}
	progs := map[string][]string{
		"sort": {"-o", "--output", "--out", "-uo", "-T", "--temporary-directory", "--compress-program=./mk", "--compress-prog", "-k",
			"--key", "-t", "--random-source", "-m", "--files0-from", "-S", "--batch-size"},
		"uniq": {"-c", "-f", "--skip-fields", "-s", "-w", "-u", "-D", "--group", "-z"},
		"xxd":  {"-r", "-c", "-cols", "-l", "-s", "-p", "-a", "-o", "-revert", "-g", "-i", "-n"},
		"sed":  {"-i", "--in-place", "--in-pl=.b", "-n", "-e", "--expression", "--expr", "-f", "-s", "-E", "-z", "-l", "--posix", "-ni", "-si", "p", "1p", "s/a/b/"},
		"rg":   {"--pre", "--pre=./mk", "-z", "--search-zip", "-e", "--regexp", "-g", "--glob", "-A", "-f", "--files", "--no-config", "alpha"},
		"file": {"-C", "--compile", "-m", "--magic-file", "-F", "-e", "-b", "-z", "-p", "-S", "-f"},
		"git": {"grep", "log", "show", "diff", "describe", "cat-file", "blame", "-O", "-Omk", "--open-files-in-pager", "--output", "--output=foo",
			"--out=foo", "-e", "-f", "--ext-diff", "--textconv", "--dirty", "--match", "--contents", "--path", "-p", "-n", "--format=%H", "HEAD", "-S",
			"--sort", "--contains", "--list", "-l", "-v", "--get", "--file", "-d", "-m", "--points-at", "--abbrev", "-L", "1,1:README.md", "--stdin"},
		"find": {".", "-exec", "-execdir", "{}", "+", ";", "./mk", "sort", "-o", "-name", "-delete", "-fprint", "foo", "-ok", "-print", "-newer", "-files0-from", "!", "("},
	}
	ran, tried := 0, 0
	x := uint64(0x51ed270b27ea7f1d)
	next := func(k int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(k))
	}
	for prog, opts := range progs {
		pieces := append(append([]string{}, opts...), common...)
		for i := 0; i < 1200; i++ {
			argv := []string{prog}
			if prog == "git" {
				subs := []string{"grep", "log", "show", "diff", "describe", "cat-file", "blame", "shortlog", "rev-list", "stash", "reflog",
					"for-each-ref", "branch", "tag", "ls-files", "ls-tree", "rev-parse", "config", "name-rev", "show-ref", "merge-base",
					"worktree", "remote", "status", "count-objects"}
				argv = append(argv, subs[next(len(subs))])
				if argv[1] == "stash" || argv[1] == "worktree" {
					argv = append(argv, "list")
				}
			}
			for k := 1 + next(5); k > 0; k-- {
				argv = append(argv, pieces[next(len(pieces))])
			}
			tried++
			if checkArgv(argv) != "" {
				continue
			}
			ran++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(scrubEnv(os.Environ(), nil), "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
			out, _ := cmd.CombinedOutput()
			cancel()
			if _, err := os.Stat(filepath.Join(dir, "MARKER")); err == nil {
				t.Fatalf("allowed %q ran the helper:\n%s", argv, firstLines(string(out), 3))
			}
			if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
				t.Fatalf("allowed %q changed the repository:\n%s\n%s", argv, d, firstLines(string(out), 3))
			}
		}
	}
	t.Logf("generated %d argvs; ran the %d the policy allows with the real programs: nothing written, no helper run", tried, ran)
	if !strings.Contains(strings.Join(progs["git"], " "), "-O") || ran < 1000 {
		t.Fatalf("too few allowed argvs (%d) for the differential to mean anything", ran)
	}
}
