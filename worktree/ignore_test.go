package worktree

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWildmatch(t *testing.T) {
	// Cases from git's t3070-wildmatch.sh.
	cases := []struct {
		pattern, text string
		pathname      bool
		want          bool
	}{
		{"foo", "foo", false, true},
		{"bar", "foo", false, false},
		{"???", "foo", false, true},
		{"??", "foo", false, false},
		{"*", "foo", false, true},
		{"f*", "foo", false, true},
		{"*f", "foo", false, false},
		{"*foo*", "foo", false, true},
		{"*ob*a*r*", "foobar", false, true},
		{"*ab", "aaaaaaabababab", false, true},
		{"foo\\*", "foo*", false, true},
		{"foo\\*bar", "foobar", false, false},
		{"f\\\\oo", "f\\oo", false, true},
		{"*[al]?", "ball", false, true},
		{"[ten]", "ten", false, false},
		{"**[!te]", "ten", false, true},
		{"**[!ten]", "ten", false, false},
		{"t[a-g]n", "ten", false, true},
		{"t[!a-g]n", "ten", false, false},
		{"t[!a-g]n", "ton", false, true},
		{"t[^a-g]n", "ton", false, true},
		{"a[]]b", "a]b", false, true},
		{"a[]-]b", "a-b", false, true},
		{"a[]-]b", "a]b", false, true},
		{"a[]-]b", "aab", false, false},
		{"a[]a-]b", "aab", false, true},
		{"]", "]", false, true},
		{"foo*bar", "foo/baz/bar", true, false},
		{"foo**bar", "foo/baz/bar", true, false},
		{"foo/**/bar", "foo/baz/bar", true, true},
		{"foo/**/bar", "foo/b/a/z/bar", true, true},
		{"foo/**/bar", "foo/bar", true, true},
		{"**/foo", "foo", true, true},
		{"**/foo", "XXX/foo", true, true},
		{"**/foo", "bar/baz/foo", true, true},
		{"*/foo", "bar/baz/foo", true, false},
		{"**/bar*", "foo/bar/baz", true, false},
		{"**/bar/*", "deep/foo/bar/baz", true, true},
		{"**/bar/*", "deep/foo/bar/baz/", true, false},
		{"**/bar/**", "deep/foo/bar/baz/", true, true},
		{"**/bar/*", "deep/foo/bar", true, false},
		{"*/bar/**", "foo/bar/baz/x", true, true},
		{"[[:alpha:]][[:digit:]][[:upper:]]", "a1B", false, true},
		{"[[:digit:][:upper:][:space:]]", "a", false, false},
		{"[[:digit:][:upper:][:space:]]", "A", false, true},
		{"[a-c[:digit:]x-z]", "5", false, true},
		{"[a-c[:digit:]x-z]", "y", false, true},
		{"[a-c[:digit:]x-z]", "q", false, false},
		{"a/*", "a/b/c", true, false},
		{"a/*", "a/b/c", false, true},
	}
	for _, c := range cases {
		if got := wildmatch(c.pattern, c.text, c.pathname); got != c.want {
			t.Errorf("wildmatch(%q, %q, pathname=%v) = %v, want %v", c.pattern, c.text, c.pathname, got, c.want)
		}
	}
}

func TestParseIgnore(t *testing.T) {
	ps := parseIgnore([]byte("\xef\xbb\xbf# comment\n\n!keep/\r\n/root\\ \nsp   \n\\#lit\na/b/\n"))
	want := []ignorePattern{
		{pat: "keep", negative: true, mustBeDir: true, noDir: true, literal: true},
		{pat: "root\\ ", literal: false},
		{pat: "sp", noDir: true, literal: true},
		{pat: "\\#lit", noDir: true},
		{pat: "a/b", mustBeDir: true, literal: true},
	}
	if len(ps) != len(want) {
		t.Fatalf("parsed %d patterns: %+v", len(ps), ps)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("pattern %d = %+v, want %+v", i, ps[i], want[i])
		}
	}
}

func FuzzWildmatch(f *testing.F) {
	for _, s := range []string{"**/a", "[[:alpha:]x-z]", "a\\", "[", "*a*b*c", "[!]]"} {
		f.Add(s, "a/b/c", true)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, pathname bool) {
		wildmatch(pattern, text, pathname) // must not panic
		l := &ignoreList{patterns: parseIgnore([]byte(pattern))}
		l.excluded(text, pathname)
	})
}

func FuzzParseIndex(f *testing.F) {
	dir := f.TempDir()
	gitCmd(f, dir, "init", "-q")
	writeFile(f, dir, "a/b.txt", "b\n")
	writeFile(f, dir, "c", "c\n")
	gitCmd(f, dir, "add", "-A")
	gitCmd(f, dir, "commit", "-q", "-m", "x")
	gitCmd(f, dir, "update-index", "--index-version", "4")
	if data, err := os.ReadFile(filepath.Join(dir, ".git", "index")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parseIndex(data) // must not panic
	})
}

func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("base"), []byte{4, 6, 0x90, 4, 2, 'x', 'y'})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		applyDelta(base, delta) // must not panic
	})
}
