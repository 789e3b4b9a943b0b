package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data: temp file in the same directory,
// fsync, rename, fsync of the directory. Readers see the old or the new
// content, never a mix.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// ErrExists is returned by [WriteFileOnce] when path holds different content.
var ErrExists = errors.New("file exists with different content")

// WriteFileOnce creates path with data and never overwrites: if path already
// holds exactly data it is reused (reused=true); if it holds anything else
// the result is [ErrExists]. Durable like [WriteFileAtomic].
func WriteFileOnce(path string, data []byte, perm os.FileMode) (reused bool, err error) {
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
	return false, syncDir(filepath.Dir(path))
}

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	name := f.Name()
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
