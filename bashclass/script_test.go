package bashclass

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// segmentsOf returns the segments of every table row (allowed or not)
// whose command is prog, with the row.
func segmentsOf(prog string) (allowed, denied [][]string) {
	for _, row := range verdictTable {
		v := Classify(row.cmd)
		for _, s := range v.Segments {
			if s.Argv[0] != prog {
				continue
			}
			if row.allow {
				allowed = append(allowed, s.Argv)
			} else if checkArgv(s.Argv) != "" {
				denied = append(denied, s.Argv)
			}
		}
	}
	return allowed, denied
}

// runIn runs argv in dir with a line of standard input and a timeout.
func runIn(t *testing.T, dir string, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = scrubEnv(os.Environ(), nil)
	cmd.Stdin = strings.NewReader("a b\n")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAwkOracle runs every awk command the table allows with real gawk
// (in --sandbox mode, which refuses system(), redirections, pipes and
// getline from files or commands) and real mawk, on the test
// repository: both must accept the program, print the same, and change
// nothing. Every awk program the table refuses for I/O is refused by
// gawk's sandbox too (or, for @ and PROCINFO, is gawk-only machinery),
// so the checker's verdict matches what the program would do.
func TestAwkOracle(t *testing.T) {
	dir := makeRepo(t, "")
	before := snapshot(t, dir)
	allowed, denied := segmentsOf("awk")
	if len(allowed) < 40 || len(denied) < 40 {
		t.Fatalf("table has %d allowed and %d denied awk commands; want at least 40 each", len(allowed), len(denied))
	}
	for _, argv := range allowed {
		args := argv[1:]
		gawk, gerr := runIn(t, dir, append([]string{"gawk", "--sandbox"}, args...)...)
		if strings.Contains(gawk, "sandbox mode") || strings.Contains(gawk, "syntax error") {
			t.Errorf("gawk --sandbox refuses allowed %q: %s", argv, gawk)
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--field") }) {
			continue // a gawk long option; mawk has none
		}
		mawk, merr := runIn(t, dir, append([]string{"mawk"}, args...)...)
		if strings.Contains(mawk, "syntax error") || strings.Contains(mawk, "mawk:") && merr != nil && gerr == nil {
			t.Errorf("mawk refuses allowed %q: %s", argv, mawk)
			continue
		}
		if gerr == nil && merr == nil && gawk != mawk {
			t.Errorf("%q: gawk and mawk disagree:\ngawk: %q\nmawk: %q", argv, gawk, mawk)
		}
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("allowed awk programs changed the directory:\n%s", d)
	}
	sandboxed := 0
	for _, argv := range denied {
		reason := checkArgv(argv)
		io := strings.Contains(reason, "redirection") || strings.Contains(reason, "system") ||
			strings.Contains(reason, "pipe") || strings.Contains(reason, "getline") || strings.Contains(reason, "|&")
		if !io || !strings.HasPrefix(reason, "awk program") {
			continue
		}
		out, _ := runIn(t, dir, append([]string{"gawk", "--sandbox"}, argv[1:]...)...)
		if !strings.Contains(out, "sandbox mode") && !strings.Contains(out, "syntax error") {
			t.Errorf("refused %q (%s), but gawk --sandbox runs it: %q", argv, reason, out)
		}
		sandboxed++
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("sandboxed gawk changed the directory:\n%s", d)
	}
	t.Logf("%d allowed awk commands agree under gawk --sandbox and mawk; %d refused ones are refused by gawk's sandbox (or do not parse)", len(allowed), sandboxed)
}

// TestSedOracle runs every sed command the table allows with real GNU sed
// in --sandbox mode (which refuses e, r, w and s///e, s///w) and checks
// it runs and changes nothing; every sed script the table refuses for e,
// r or w is refused by sed's sandbox as well.
func TestSedOracle(t *testing.T) {
	dir := makeRepo(t, "")
	before := snapshot(t, dir)
	allowed, denied := segmentsOf("sed")
	if len(allowed) < 40 || len(denied) < 25 {
		t.Fatalf("table has %d allowed and %d denied sed commands; want at least 40 and 25", len(allowed), len(denied))
	}
	for _, argv := range allowed {
		out, err := runIn(t, dir, append([]string{"sed", "--sandbox"}, argv[1:]...)...)
		if err != nil {
			t.Errorf("sed --sandbox fails on allowed %q: %v: %s", argv, err, out)
		}
	}
	sandboxed := 0
	for _, argv := range denied {
		reason := checkArgv(argv)
		if !strings.HasPrefix(reason, "sed command") && !strings.HasPrefix(reason, "sed s///") || strings.Contains(reason, "not allowed") || strings.Contains(reason, "supported") {
			continue
		}
		out, err := runIn(t, dir, append([]string{"sed", "--sandbox"}, argv[1:]...)...)
		if err == nil || !strings.Contains(out, "disabled in sandbox mode") {
			t.Errorf("refused %q (%s), but sed --sandbox accepts it: %v %q", argv, reason, err, out)
		}
		sandboxed++
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("sed changed the directory:\n%s", d)
	}
	t.Logf("%d allowed sed commands run under sed --sandbox; %d refused ones are refused by it", len(allowed), sandboxed)
}

// TestScriptCheckersBadInput feeds the awk and sed checkers hostile and
// truncated programs: they refuse with a reason and never panic.
func TestScriptCheckersBadInput(t *testing.T) {
	for _, p := range []string{"", "\"", "/", "{", "}", "(((", ")", "\\", "/[/", "a /", "x++ /", "print >", "@", "\x00", "#\n@", strings.Repeat("(", 100000)} {
		_ = checkAwkProgram(p) // must not panic
	}
	if r := checkAwkProgram(strings.Repeat("x", maxAwkProgram+1)); r == "" {
		t.Errorf("an over-long awk program is allowed")
	}
	for _, s := range []string{"", "s", "s/", "s/a", "s/a/", "s/a/b", "y", "y/", "y/a/", "{", "}", "\\", "\\x", "/", "/[", "/[[:", "1,", "1~", "0,+", "a\\", "!", "!!p", strings.Repeat("{", 1000)} {
		_ = checkSedScript(s) // must not panic
	}
	for _, s := range []string{"s/a", "/[", "{", "}"} {
		if checkSedScript(s) == "" {
			t.Errorf("sed script %q allowed", s)
		}
	}
}

// differential generates programs from pieces that confuse lexers
// (quotes, brackets, slashes, comments, continuations) and dangerous
// operations, and checks that whatever the checker allows, the real
// program in its sandbox mode does not find a sandbox-violating operation
// in: gawk --sandbox for awk, sed --sandbox for sed.
func differential(t *testing.T, n int, seed uint64, pieces []string, allowed func(string) bool, argv func(string) []string) int {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir+"/in.txt", "a b\n/x/ \"q\"\n", 0o644)
	before := snapshot(t, dir)
	x := seed
	next := func(k int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(k))
	}
	ran := 0
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := 1 + next(10); k > 0; k-- {
			b.WriteString(pieces[next(len(pieces))])
		}
		prog := b.String()
		if !allowed(prog) {
			continue
		}
		ran++
		out, _ := runIn(t, dir, argv(prog)...)
		if strings.Contains(out, "sandbox mode") {
			t.Errorf("allowed program %q reaches a sandboxed operation: %s", prog, firstLines(out, 2))
		}
	}
	if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
		t.Fatalf("a program changed the directory:\n%s", d)
	}
	return ran
}

func TestAwkDifferential(t *testing.T) {
	pieces := []string{"/", "[", "]", "^", "\"", "\\", "#", "\n", "\\\n", " ", "print ", "printf ", ">", ">>", "\"/dev/null\"",
		"system(\"true\")", "|", "getline", "(", ")", ";", "{", "}", "a", "1", "$1", ",", "++", "?", ":", "~", "/x/", "[/]",
		"[]\"]", "\"[\"", "/[\"]/", "BEGIN", "END", "if", "else", "x=", "close(\"x\")", "NR>1", "'", "&&", "||", "!", "in", "-"}
	ran := differential(t, 6000, 0x9e3779b97f4a7c15, pieces, func(p string) bool { return checkAwkProgram(p) == "" },
		func(p string) []string { return []string{"gawk", "--sandbox", "--", p, "in.txt"} })
	t.Logf("%d generated awk programs allowed and run under gawk --sandbox", ran)
}

func TestSedDifferential(t *testing.T) {
	pieces := []string{"s", "/", "|", "[", "]", "^", "\\", "\n", ";", "{", "}", "p", "w", " x", "e", "r", "R", "W", "g", "1", "$", ",",
		"!", "a", "i", "c", "y", "#", ":", "b", "t", "[/]", "/x/", "s/a/b/", "a\\\n", "I", "M", "=", "d", "q", "l", "n", "z", "~", "+"}
	ran := differential(t, 6000, 0x2545f4914f6cdd1d, pieces, func(s string) bool { return checkSedScript(s) == "" },
		func(s string) []string { return []string{"sed", "--sandbox", "-n", "-e", s, "in.txt"} })
	t.Logf("%d generated sed scripts allowed and run under sed --sandbox", ran)
}
