package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAnchoredWritesNeverCreateTheAnchor: a write below an anchor (a
// session's directory) whose anchor was removed, or renamed away (as a
// delete sets it aside), before the write or at any step of it, fails
// with ErrGone and leaves nothing at the anchor's path; plain WriteFile
// and WriteOnce create no directory at all. With the anchor there, the
// missing directories below it are made.
func TestAnchoredWritesNeverCreateTheAnchor(t *testing.T) {
	writers := map[string]func(anchor, path string) error{
		"WriteFileIn": func(a, p string) error { return WriteFileIn(a, p, []byte("x\n"), 0o644) },
		"WriteOnceIn": func(a, p string) error { _, err := WriteOnceIn(a, p, []byte("x\n"), 0o444); return err },
		"MkdirIn":     func(a, p string) error { return MkdirIn(a, filepath.Dir(p)) },
		"WriteFile":   func(a, p string) error { return WriteFile(p, []byte("x\n"), 0o644) },
		"WriteOnce":   func(a, p string) error { _, err := WriteOnce(p, []byte("x\n"), 0o444); return err },
	}
	for name, write := range writers {
		for _, how := range []string{"removed", "renamed"} {
			for _, at := range []string{"before", "mkdir", "temp"} {
				plain := name == "WriteFile" || name == "WriteOnce"
				if plain && at == "mkdir" || name == "MkdirIn" && at != "before" {
					continue // no such step
				}
				t.Run(name+"/"+how+"/"+at, func(t *testing.T) {
					base := t.TempDir()
					anchor := filepath.Join(base, "sessions", "s-1")
					trash := filepath.Join(base, "sessions", ".deleted-s-1")
					if err := os.MkdirAll(filepath.Join(anchor, "work"), 0o700); err != nil {
						t.Fatal(err)
					}
					target := filepath.Join(anchor, "work", "plans", "current.md")
					if name == "WriteFile" || name == "WriteOnce" {
						os.Mkdir(filepath.Dir(target), 0o700) // its directory exists until it goes
					}
					away := func() {
						if how == "removed" {
							if err := os.RemoveAll(anchor); err != nil {
								t.Fatal(err)
							}
						} else if err := os.Rename(anchor, trash); err != nil {
							t.Fatal(err)
						}
					}
					fired := false
					step = func(s string) {
						if s == at && !fired {
							fired = true
							away()
						}
					}
					defer func() { step = func(string) {} }()
					if at == "before" {
						fired = true
						away()
					}
					err := write(anchor, target)
					if !fired {
						t.Fatalf("step %q never reached (err %v)", at, err)
					}
					if err == nil {
						t.Fatal("the write succeeded without its directory")
					}
					if name != "WriteFile" && name != "WriteOnce" && !errors.Is(err, ErrGone) {
						t.Errorf("error %v, want ErrGone", err)
					}
					if _, serr := os.Lstat(anchor); !errors.Is(serr, os.ErrNotExist) {
						t.Fatalf("the write brought back the anchor (err %v)", err)
					}
					if how == "renamed" {
						if _, serr := os.Lstat(filepath.Join(trash, "work", "plans", "current.md")); serr == nil {
							t.Error("the write landed in the renamed directory")
						}
					}
				})
			}
		}
	}
}

// TestAnchoredWriteMakesWhatIsMissing: with the anchor there, the
// directories below it are created one level at a time (0700), a path
// outside the anchor is refused, and plain WriteFile needs its directory.
func TestAnchoredWriteMakesWhatIsMissing(t *testing.T) {
	anchor := t.TempDir()
	p := filepath.Join(anchor, "a", "b", "c.txt")
	if err := WriteFile(p, []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile created its directory")
	}
	if _, err := os.Lstat(filepath.Join(anchor, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("WriteFile created a directory")
	}
	if err := WriteFileIn(anchor, p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(anchor, "a", "b")); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode())
	}
	if reused, err := WriteOnceIn(anchor, p, []byte("x"), 0o600); err != nil || !reused {
		t.Errorf("write-once of the same content: %v %v", reused, err)
	}
	for _, bad := range []string{filepath.Join(anchor, "..", "x"), "/etc/x", filepath.Join(anchor, "a", "..", "..", "y")} {
		if err := WriteFileIn(anchor, bad, []byte("x"), 0o600); err == nil {
			t.Errorf("%s written outside the anchor", bad)
		}
	}
	if err := MkdirIn(anchor, anchor); err != nil {
		t.Errorf("the anchor itself: %v", err)
	}
	f := filepath.Join(anchor, "file")
	os.WriteFile(f, nil, 0o600)
	if err := WriteFileIn(f, filepath.Join(f, "x"), []byte("x"), 0o600); !errors.Is(err, ErrGone) {
		t.Errorf("an anchor that is a file: %v", err)
	}
}
