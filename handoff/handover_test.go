package handoff

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"planbridge/internal/atomicfile"
)

// TestInstallPlan: the fork gets the archive byte for byte and read-only,
// the current plan when there is one; a retried hand-over reuses what it
// wrote; a missing archive or a different plan already in the fork fails,
// naming the step, and leaves the fork's file as it was.
func TestInstallPlan(t *testing.T) {
	const art = "plans/accepted-0123456789abcdef.md"
	write := func(dir, rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(dir, rel string) (string, os.FileMode) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			return "", 0
		}
		fi, _ := os.Stat(p)
		return string(b), fi.Mode().Perm()
	}
	for _, c := range []struct {
		name          string
		src, fork     map[string]string
		err           string
		wantArt       string
		wantCur       string
		retryIdentity bool
	}{
		{name: "archive and current", src: map[string]string{art: "# P\n", CurrentPlan: "# P\n"}, wantArt: "# P\n", wantCur: "# P\n", retryIdentity: true},
		{name: "no current plan", src: map[string]string{art: "# P\n"}, wantArt: "# P\n"},
		{name: "no archive", src: map[string]string{CurrentPlan: "# P\n"}, err: "no such file"},
		{name: "another plan in the fork", src: map[string]string{art: "# P\n"}, fork: map[string]string{art: "# Other\n"},
			err: "install the accepted plan in the fork", wantArt: "# Other\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, fork := t.TempDir(), t.TempDir()
			for rel, b := range c.src {
				write(src, rel, b)
			}
			for rel, b := range c.fork {
				write(fork, rel, b)
			}
			err := InstallPlan(src, fork, art)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err %v, want %q", err, c.err)
			}
			if c.err != "" && strings.Contains(c.err, "install") && !errors.Is(err, atomicfile.ErrExists) {
				t.Errorf("err %v is not ErrExists", err)
			}
			if b, perm := read(fork, art); b != c.wantArt || c.err == "" && perm != 0o444 {
				t.Errorf("archive %q %o, want %q 0444", b, perm, c.wantArt)
			}
			if b, perm := read(fork, CurrentPlan); b != c.wantCur || c.wantCur != "" && perm != 0o644 {
				t.Errorf("current plan %q %o, want %q", b, perm, c.wantCur)
			}
			if c.retryIdentity {
				if err := InstallPlan(src, fork, art); err != nil {
					t.Errorf("a retried hand-over: %v", err)
				}
			}
		})
	}
}
