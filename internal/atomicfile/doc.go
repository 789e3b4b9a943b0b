// Package atomicfile writes files so that readers see the old or the new
// content, never a mix, and a crash loses at most the write in progress:
// temp file in the same directory, fsync, rename (or link(2) for
// write-once), fsync of the directory.
//
// Temp files are named ".<name>.pbtmp-<pid>-<random>". One left behind by
// a writer that was killed (its pid no longer alive) is removed by the
// next successful write of the same file, so a crash never leaves a
// stray file in a repository after the write is redone.
package atomicfile
