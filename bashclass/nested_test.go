package bashclass

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNestedWordsStayOperands runs, through the real runner, commands
// whose words the policy never sees: words xargs reads from its input and
// paths find substitutes for {}. The words and file names are chosen to
// be dangerous options of the command run (sort -o, sed -i, rg --pre,
// uniq's output operand); after the run no file may have been written or
// changed and no helper may have run, because the launch puts xargs's
// words after "--" and find's paths always start with a starting point.
func TestNestedWordsStayOperands(t *testing.T) {
	dir := t.TempDir()
	marks := t.TempDir()
	helper := filepath.Join(t.TempDir(), "pre")
	writeFile(t, helper, "#!/bin/sh\ntouch "+marks+"/pre-ran\ncat \"$1\"\n", 0o755)
	for _, name := range []string{"a.txt", "-ofoo", "--output=bar", "-i", "-e", "--pre=" + helper, "-s"} {
		writeFile(t, filepath.Join(dir, name), "b\na\n", 0o644)
	}
	before := snapshot(t, dir)
	for _, confine := range []bool{false, true} {
		r := &Runner{Dir: dir, Timeout: 20 * time.Second, noConfine: !confine}
		runNested(t, r, dir, marks, before, helper)
	}
	// The same words given to the commands directly are options, so the
	// file names above are live ammunition (the policy refuses these).
	for _, src := range []string{"sort -ofoo a.txt", "sed -i s/a/b/ a.txt", "rg --pre=" + helper + " a", "uniq a.txt b.txt"} {
		if v := Classify(src); v.Allow {
			t.Errorf("Classify(%q) allowed", src)
		}
	}
}

// runNested runs the commands of TestNestedWordsStayOperands with r;
// without confinement only the policy and the launch stand in the way.
func runNested(t *testing.T, r *Runner, dir, marks string, before map[string]string, helper string) {
	t.Helper()
	for _, src := range []string{
		"echo -ofoo | xargs sort",
		"echo --output=bar | xargs sort",
		"ls | xargs sort",
		"ls | xargs -n 1 sort",
		"find . -type f -print0 | xargs -0 sort",
		"echo -i | xargs sed -n 1p",
		"echo -i -e | xargs sed s/a/b/",
		"ls | xargs sed -n p",
		"echo --pre=" + helper + " | xargs rg a",
		"ls | xargs rg -n a",
		"ls | xargs grep -c a",
		"ls | xargs cat",
		"ls | xargs head -n 1",
		"ls | xargs wc -l",
		"find . -type f -exec sort {} +",
		"find . -type f -exec sed -n 1p {} +",
		"find . -type f -exec rg a {} +",
		"find . -type f -exec uniq {} \\;",
		"find . -type f -execdir sort {} \\;",
		"find . -name '-*' -exec cat {} +",
	} {
		if v := Classify(src); !v.Allow {
			t.Fatalf("Classify(%q) denied: %s", src, v.Reason)
		}
		res, err := r.Run(context.Background(), src)
		if err != nil || res.Refused {
			t.Errorf("Run(%q): %v, refused %v (%s)", src, err, res.Refused, res.Reason)
		}
		if d := diffSnapshots(before, snapshot(t, dir)); d != "" {
			t.Fatalf("Run(%q) changed the directory:\n%s\noutput:\n%s", src, d, res.Output)
		}
		if ents, _ := os.ReadDir(marks); len(ents) > 0 {
			t.Fatalf("Run(%q) ran the --pre helper; output:\n%s", src, res.Output)
		}
		if strings.Contains(string(res.Output), "invalid option") || strings.Contains(string(res.Output), "unrecognized option") {
			t.Errorf("Run(%q): a word reached the command as an option:\n%s", src, res.Output)
		}
	}
}
