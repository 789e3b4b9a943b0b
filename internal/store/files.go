package store

import (
	"os"

	"planbridge/internal/atomicfile"
)

// WriteFileAtomic is [atomicfile.WriteFile]: path's directory must exist
// (no directory is created, so no write brings back a deleted session's
// directory; [atomicfile.WriteFileIn] creates folders below an anchor).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}

// ErrExists is returned by [WriteFileOnce] when path holds different content.
var ErrExists = atomicfile.ErrExists

// WriteFileOnce is [atomicfile.WriteOnce]; like [WriteFileAtomic] it
// creates no directory.
func WriteFileOnce(path string, data []byte, perm os.FileMode) (reused bool, err error) {
	return atomicfile.WriteOnce(path, data, perm)
}

// WriteFileOnceIn is [atomicfile.WriteOnceIn]: path lies below anchor (a
// session's directory), whose missing folders it creates, never anchor.
func WriteFileOnceIn(anchor, path string, data []byte, perm os.FileMode) (reused bool, err error) {
	return atomicfile.WriteOnceIn(anchor, path, data, perm)
}
