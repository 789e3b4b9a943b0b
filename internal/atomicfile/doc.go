// Package atomicfile writes files so that readers see the old or the new
// content, never a mix, and a crash loses at most the write in progress:
// temp file in the same directory, fsync, rename (or link(2) for
// write-once), fsync of the directory.
//
// No write creates the directory it is anchored at: [WriteFile] and
// [WriteOnce] create no directory at all, and [WriteFileIn],
// [WriteOnceIn] and [MkdirIn] create the missing directories between an
// existing anchor the caller names (a session's directory, a fork, the
// workspace) and the file, one level at a time, never the anchor itself
// nor anything above it. A write whose anchor is gone — removed, or
// renamed away (a session's delete sets its directory aside) before or
// while it runs — fails with [ErrGone] and creates nothing at the
// anchor's path, because every step names its file through the anchor's
// path, which no longer leads to the moved directory. A test of this
// package lists every function of the module that creates directories
// otherwise, with why it never creates a session's.
//
// Temp files are named ".<name>.pbtmp-<pid>-<random>". One left behind by
// a writer that was killed (its pid no longer alive) is removed by the
// next successful write of the same file, so a crash never leaves a
// stray file in a repository after the write is redone.
package atomicfile
