package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadPolicy(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	state := filepath.Join(ws, "state")
	work := filepath.Join(state, "sessions", "s1", "work")
	for _, d := range []string{filepath.Join(ws, "sub"), work} {
		os.MkdirAll(d, 0o755)
	}
	for _, f := range []string{filepath.Join(ws, "a.txt"), filepath.Join(state, "state.db"), filepath.Join(work, "plan.md"), filepath.Join(other, "secret")} {
		os.WriteFile(f, []byte(filepath.Base(f)), 0o644)
	}
	for name, target := range map[string]string{
		"env": "/proc/self/environ", "stdin": "/dev/stdin", "fd0": "/proc/self/fd/0", "out": other,
		"outfile": filepath.Join(other, "secret"), "in": "a.txt", "loop": "loop", "dotdot": "../" + filepath.Base(other),
		"devnull": "/dev/null", "viaproc": "/proc/self/cwd/a.txt",
	} {
		os.Symlink(target, filepath.Join(ws, name))
	}
	p, err := NewReadPolicy([]string{ws, work}, []string{state})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"a.txt", true}, {"sub", true}, {"in", true}, {".", true}, {work + "/plan.md", true}, {"devnull", true}, {"/dev/null", true},
		{"env", false}, {"stdin", false}, {"fd0", false}, {"out/secret", false}, {"outfile", false}, {"dotdot/secret", false},
		{"viaproc", false}, {"/proc/self/environ", false}, {"/dev/stdin", false}, {"/dev/fd/0", false}, {"/proc/1/environ", false},
		{"/sys/kernel", false}, {"/etc/passwd", false}, {"state/state.db", false}, {"state", false}, {"..", false},
		{filepath.Join(other, "secret"), false}, {filepath.Join(other, "missing"), false}, {"a\x00b", false},
	} {
		f, err := p.Open(ws, c.path)
		if err == nil {
			f.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("Open(%q) = %v; want ok=%v", c.path, err, c.ok)
		}
		if !c.ok && c.path != "a\x00b" && !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("Open(%q) = %v; want ErrOutsideRoots (a missing file outside must not say so)", c.path, err)
		}
	}
	if _, err := p.Open(ws, "loop"); err == nil {
		t.Errorf("a symlink loop opened")
	}
	if _, err := p.Open(ws, "missing.txt"); !os.IsNotExist(err) {
		t.Errorf("a missing file inside: %v; want not-exist", err)
	}
	// A FIFO inside the workspace is refused (it would block).
	fifo := filepath.Join(ws, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := p.Open(ws, "fifo"); err == nil {
		f.Close()
		t.Errorf("a FIFO opened")
	}
	f, err := p.Open(ws, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "a.txt" {
		t.Errorf("read %q", b)
	}
}

func TestReadPolicyRefusesRootsOverKernelTrees(t *testing.T) {
	for _, r := range []string{"/", "/proc", "/proc/self", "/dev", "/sys/kernel", "relative"} {
		if _, err := NewReadPolicy([]string{r}, nil); err == nil {
			t.Errorf("NewReadPolicy(%q) accepted a root", r)
		}
	}
	if _, err := NewReadPolicy([]string{"/usr/share", t.TempDir()}, nil); err != nil {
		t.Errorf("ordinary roots: %v", err)
	}
}
