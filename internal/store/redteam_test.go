package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const otherUID = 65534

// TestStateDirOfAnotherUser: a state directory someone else created (the
// fallback /tmp/planbridge-state is a predictable name), or a database
// file they planted in ours, stays theirs whatever its mode: Open refuses
// it and writes nothing there. Made as root (who can chown); run by root,
// whose chmod would otherwise succeed on anything (unprivileged, the
// chmod of another user's file already fails).
func TestStateDirOfAnotherUser(t *testing.T) {
	ctx := context.Background()
	expectRefused := func(name, dir string) {
		t.Helper()
		s, err := Open(ctx, dir)
		if err == nil {
			s.Close()
			t.Fatalf("%s: Open succeeded", name)
		}
		if !strings.Contains(err.Error(), "belongs to uid") {
			t.Fatalf("%s: unclear error %v", name, err)
		}
	}
	if os.Geteuid() == 0 {
		foreign := filepath.Join(t.TempDir(), "state")
		os.Mkdir(foreign, 0o777)
		os.Chown(foreign, otherUID, otherUID)
		expectRefused("foreign dir", foreign)
		if _, err := os.Stat(filepath.Join(foreign, "state.db")); err == nil {
			t.Fatal("a database was created in another user's directory")
		}

		planted := t.TempDir()
		os.WriteFile(filepath.Join(planted, "state.db"), nil, 0o600)
		os.Chown(filepath.Join(planted, "state.db"), otherUID, otherUID)
		expectRefused("planted database", planted)

		own := t.TempDir()
		link := filepath.Join(t.TempDir(), "state-link")
		os.Symlink(own, link)
		os.Lchown(link, otherUID, otherUID)
		expectRefused("foreign link", link)
	}
	// Our own directory, fresh or behind our own link, opens.
	own := t.TempDir()
	link := filepath.Join(t.TempDir(), "mine")
	os.Symlink(own, link)
	s, err := Open(ctx, link)
	if err != nil {
		t.Fatalf("own linked dir: %v", err)
	}
	s.Close()
}
