package review

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

const fullPlan = `# Rename the greeting

## Summary
Rename.

## Key Changes
- Change ` + "`greet`" + ` in internal/app/greet.go and ` + "`cmd/tool/`" + `
- Create internal/app/farewell.go with ` + "`SayBye`" + `
- Update ` + "`docs/missing.md`" + ` and call ` + "`app.Greet()`" + ` and ` + "`NoSuchThing`" + `

## Regression Coverage
- internal/app/farewell_test.go under the new file
## Validation
- ` + "`go test ./internal/app/...`" + `

` + "```sh\ncat nothere.go\n```" + `

## Assumptions
- none
`

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func rootFS(t *testing.T, dir string) Workspace {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return Workspace{FS: r.FS()}
}

func kinds(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Kind+":"+w.Subject)
	}
	return out
}

func TestCheckFindsMissingFileAndUnknownIdentifier(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"internal/app/greet.go": "package app\n\nfunc Greet() string { return greet }\nconst greet = \"hello\"\n",
		"cmd/tool/main.go":      "package main\n",
		// A word only inside an ignored or .git file does not count.
		".git/config":       "NoSuchThing\n",
		"build/out.txt":     "NoSuchThing\n",
		".gitignore":        "build/\n",
		"bin/blob":          "NoSuchThing\x00\n",
		"internal/app/x.go": "// NoSuchThingElse\n",
	})
	ws := rootFS(t, dir)
	ws.Ignored = func(rel string, isDir bool) bool {
		return rel == ".git" || rel == "build" && isDir
	}
	got := Check(fullPlan, ws, Limits{})
	want := []string{"missing_file:docs/missing.md", "unknown_identifier:NoSuchThing"}
	if !slices.Equal(kinds(got), want) {
		t.Fatalf("warnings %q, want %q\n%+v", kinds(got), want, got)
	}
	if got[0].Line != 9 || got[1].Line != 9 || !strings.Contains(got[0].Message, "line 9") {
		t.Fatalf("lines: %+v", got)
	}
	if h := Hint(got); !strings.Contains(h, "docs/missing.md") || !strings.Contains(h, "NoSuchThing") || strings.Count(h, "\n- ") != 2 {
		t.Fatalf("hint %q", h)
	}
	if Hint(nil) != "" {
		t.Fatal("empty hint")
	}
}

func TestCheckSectionsAndFreeForm(t *testing.T) {
	got := Check("# T\n\n## Key Changes\n- do it\n## validation steps\n- run\n", Workspace{FS: fstest.MapFS{}}, Limits{})
	want := []string{"missing_section:Summary", "missing_section:Regression Coverage", "missing_section:Assumptions"}
	if !slices.Equal(kinds(got), want) {
		t.Fatalf("%q", kinds(got))
	}
}

func TestCheckHostileWorkspace(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.go": "OnlyOutside\n"})
	dir := writeTree(t, map[string]string{"a.go": "package a\n"})
	// Symbolic links out of the tree and into /proc are neither followed
	// nor read; a link named like the cited file still "exists".
	for name, target := range map[string]string{"out": outside, "proc": "/proc/self", "link.go": filepath.Join(outside, "secret.go")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "-rf"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := "## Key Changes\n- edit `link.go`, `out/secret.go`, `../escape.go`, `/etc/passwd`, `-rf/x.go` and `OnlyOutside`\n"
	got := Check(plan, rootFS(t, dir), Limits{})
	k := kinds(got)
	if !slices.Contains(k, "missing_file:out/secret.go") || !slices.Contains(k, "unknown_identifier:OnlyOutside") {
		t.Fatalf("%q", k)
	}
	for _, w := range got {
		if strings.Contains(w.Subject, "..") || strings.Contains(w.Subject, "passwd") || w.Subject == "link.go" || strings.HasPrefix(w.Subject, "-") {
			t.Fatalf("unexpected %+v", w)
		}
	}
}

func TestCheckSearchCaps(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[filepath.Join("d", strings.Repeat("f", i+1)+".go")] = "package d\n"
	}
	files["zz/last.go"] = "var Needle = 1\n"
	ws := rootFS(t, writeTree(t, files))
	plan := "## Key Changes\n- use `Needle` and `Absent`\n"
	got := Check(plan, ws, Limits{Files: 5, Bytes: 1 << 20, FileSize: 1 << 10, Time: time.Hour, Idents: 8})
	if k := kinds(got); len(k) == 0 || k[0] != "search_capped:" || slices.Contains(k, "unknown_identifier:Needle") {
		t.Fatalf("capped search: %q", k)
	}
	// The clock cap: a clock that jumps past the deadline stops the walk.
	calls := 0
	start := time.Unix(0, 0)
	ws.Now = func() time.Time { calls++; return start.Add(time.Duration(calls) * time.Minute) }
	got = Check(plan, ws, Limits{Files: 100, Bytes: 1 << 20, FileSize: 1 << 10, Time: 90 * time.Second, Idents: 8})
	if k := kinds(got); len(k) == 0 || k[0] != "search_capped:" {
		t.Fatalf("time cap: %q", k)
	}
	// Without caps in the way both are decided.
	ws.Now = nil
	got = Check(plan, ws, Limits{})
	if k := kinds(got); !slices.Contains(k, "unknown_identifier:Absent") || slices.Contains(k, "unknown_identifier:Needle") {
		t.Fatalf("%q", k)
	}
}

func TestCiteModel(t *testing.T) {
	c := Cite("See https://x.org/a.go, ./pkg/y.go:12, `internal/z/`, and/or e.g. 3/3, `work://plans/v1.md`, `go test ./...`, `a.b.Cfoo()`.\n```\n`inside.go`\n```\nAdd `New` in new/dir/ then `new/dir/f.go`\n")
	var paths []string
	for _, p := range c.Paths {
		paths = append(paths, p.Text)
	}
	if want := []string{"internal/z", "pkg/y.go", "new/dir/f.go", "new/dir"}; !slices.Equal(paths, want) {
		t.Fatalf("paths %q want %q", paths, want)
	}
	if len(c.Idents) != 2 || c.Idents[0].Text != "a.b.Cfoo()" || identKey(c.Idents[0].Text) != "Cfoo" || c.Idents[1].Line != 5 {
		t.Fatalf("idents %+v", c.Idents)
	}
	if !c.created("new/dir/f.go") || !c.created("New") || c.created("pkg/y.go") {
		t.Fatalf("created %v", c.Created)
	}
}

// TestContainsWordOracle checks the whole-word match against grep -w.
func TestContainsWordOracle(t *testing.T) {
	dir := t.TempDir()
	for i, text := range []string{"FooBar", "xFoo", "Foo_", "Foo()", "a.Foo.b", "Fo o", "é Foo", "Fooé", "FooFoo Foo"} {
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(text+"\n"), 0o644)
		err := exec.Command("grep", "-qw", "Foo", f).Run()
		grep := err == nil
		// grep -w counts only ASCII-ish word constituents in the C locale;
		// bytes >= 0x80 are word bytes here (UTF-8 letters).
		if strings.ContainsAny(text, "é") {
			continue
		}
		if got := containsWord([]byte(text), "Foo"); got != grep {
			t.Errorf("%d %q: containsWord=%v grep -w=%v", i, text, got, grep)
		}
	}
}
