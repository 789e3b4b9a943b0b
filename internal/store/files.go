package store

import (
	"os"

	"planbridge/internal/atomicfile"
)

// WriteFileAtomic is [atomicfile.WriteFile].
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}

// ErrExists is returned by [WriteFileOnce] when path holds different content.
var ErrExists = atomicfile.ErrExists

// WriteFileOnce is [atomicfile.WriteOnce].
func WriteFileOnce(path string, data []byte, perm os.FileMode) (reused bool, err error) {
	return atomicfile.WriteOnce(path, data, perm)
}
