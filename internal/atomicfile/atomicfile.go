package atomicfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrExists is returned by [WriteOnce] when path holds different content.
var ErrExists = errors.New("file exists with different content")

// ErrGone is wrapped by the error of a write whose anchor ([WriteFileIn])
// is not there (removed, or renamed away as a session's delete does) or
// is no directory: the write created nothing.
var ErrGone = errors.New("directory is gone")

// WriteFile replaces path with data atomically and durably. The directory
// of path must exist: WriteFile creates no directory (see [WriteFileIn]).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	step("temp")
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", path, err)
	}
	removeStale(path)
	return SyncDir(filepath.Dir(path))
}

// WriteOnce creates path with data and never overwrites: if path already
// holds exactly data it is reused (reused=true); if it holds anything else
// the result is [ErrExists]. Durable like [WriteFile]; like it, it creates
// no directory.
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
	step("temp")
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

// WriteFileIn is [WriteFile] of path, which must lie below anchor, an
// existing directory: the directories missing between anchor and path are
// created first, one level at a time (mkdir(2), mode 0700), never anchor
// itself nor anything above it. An anchor that is not there fails with
// [ErrGone] and creates nothing; so does one renamed away while the write
// is in flight, because every step names its file by a path through
// anchor's name, which no longer leads anywhere.
func WriteFileIn(anchor, path string, data []byte, perm os.FileMode) error {
	if err := MkdirIn(anchor, filepath.Dir(path)); err != nil {
		return err
	}
	step("mkdir")
	return gone(anchor, WriteFile(path, data, perm))
}

// step is a test's hook between the steps of a write ("mkdir": the
// directories exist; "temp": the temp file is written).
var step = func(string) {}

// WriteOnceIn is [WriteOnce] of path below anchor, creating missing
// directories as [WriteFileIn] does.
func WriteOnceIn(anchor, path string, data []byte, perm os.FileMode) (reused bool, err error) {
	if err := MkdirIn(anchor, filepath.Dir(path)); err != nil {
		return false, err
	}
	step("mkdir")
	reused, err = WriteOnce(path, data, perm)
	return reused, gone(anchor, err)
}

// MkdirIn creates dir, which is anchor or lies below it, and its missing
// parents below anchor, one level at a time (mode 0700); anchor must
// exist and is never created, nor anything above it ([ErrGone]).
func MkdirIn(anchor, dir string) error {
	anchor, dir = filepath.Clean(anchor), filepath.Clean(dir)
	rel, err := filepath.Rel(anchor, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return fmt.Errorf("%s is not below %s", dir, anchor)
	}
	if fi, err := os.Stat(anchor); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: %w", anchor, ErrGone)
	}
	if rel == "." {
		return nil
	}
	d := anchor
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, c)
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return gone(anchor, err)
		}
	}
	return nil
}

// gone turns err into an [ErrGone] one when anchor is not there any more
// (the write failed because its directory went away).
func gone(anchor string, err error) error {
	if err == nil || errors.Is(err, ErrGone) {
		return err
	}
	if fi, serr := os.Stat(anchor); serr != nil || !fi.IsDir() {
		return fmt.Errorf("%s: %w (%v)", anchor, ErrGone, err)
	}
	return err
}

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".pbtmp-" }

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
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
