package atomicfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrExists is returned by [WriteOnce] when path holds different content.
var ErrExists = errors.New("file exists with different content")

// WriteFile replaces path with data atomically and durably.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", path, err)
	}
	removeStale(path)
	return SyncDir(filepath.Dir(path))
}

// WriteOnce creates path with data and never overwrites: if path already
// holds exactly data it is reused (reused=true); if it holds anything else
// the result is [ErrExists]. Durable like [WriteFile].
func WriteOnce(path string, data []byte, perm os.FileMode) (reused bool, err error) {
	if old, err := os.ReadFile(path); err == nil {
		if bytes.Equal(old, data) {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", path, ErrExists)
	}
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	// link(2) fails if the target exists, so two writers cannot both win.
	if err := os.Link(tmp, path); err != nil {
		if old, rerr := os.ReadFile(path); rerr == nil && bytes.Equal(old, data) {
			return true, nil
		}
		return false, fmt.Errorf("publish %s: %w", path, err)
	}
	removeStale(path)
	return false, SyncDir(filepath.Dir(path))
}

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".pbtmp-" }

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := filepath.Join(dir, tempPrefix(path)+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", path, werr)
	}
	return name, nil
}

// removeStale removes temp files of path left by writers that are gone.
func removeStale(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// SyncDir makes the entries of dir (a file created, renamed or removed
// in it) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
