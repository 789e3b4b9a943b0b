// Package worktree inspects git checkouts (HEAD, refs, a status walk) and
// creates linked worktrees without running any repository helper: no hooks,
// no filters, no fsmonitor, no git process.
//
// [Open] finds the checkout containing a directory (main or linked
// worktree; [RootOf] and [HeadOf] read its root and HEAD in one call).
// [Repo.Status] reports what `git status --porcelain
// --untracked-files=all --no-renames` reports, from the index's stat data
// and a parallel directory walk, hashing only files whose stat data cannot
// prove them clean. [ValidBranchName] applies the rules of `git
// check-ref-format --branch`. [AddWorktree] creates a linked worktree the git
// CLI recognises, on a new branch from HEAD, with its own parallel checkout
// and index; [CleanupCommand] is what a person runs to undo one, and
// [CleanupFor] the command that clears whatever stands where a fork goes.
// [AddWorktreeWith] with an owner makes a fork that survives crashes: the
// administrative directory is built under a staging name carrying the
// owner and moved into .git/worktrees only once marked, the branch is
// created only after that, the checkout gets a completion mark last;
// [VerifyFork] takes only a complete one, and [Discard] removes what that
// owner began (its staging directory, its marked directory, and, only
// while that marked directory proves the attempt got so far, its ref lock
// and its branch at the base) and nothing else. A new branch is refused
// when it exists or an existing one, loose or packed, stops it as git
// would ("plan" stops "plan/x"; [BranchConflict]).
// [ExcludeForks] adds /.worktrees/ to the repository's info/exclude, once
// and only when it is not ignored already, so `git status` in the main
// checkout does not list the forks. [Repo.ReadCommitEntry] reads one
// committed entry (file, executable, link or submodule) and
// [Repo.ChangedPaths] lists the paths two commits differ in (what `git
// diff --name-only --no-renames` lists); [Repo.Prefix] is a directory's
// place in the checkout (what `git rev-parse --show-prefix` prints).
//
// go-git provides reference access and the fallback object store. The
// status walk, the index reader and writer, the ignore matcher (a
// transliteration of git's wildmatch and exclude precedence) and the pack
// reader are this package's own: go-git's Worktree.Status and checkout are
// about ten times slower than the git CLI, and its Status ignores
// .git/info/exclude since v5.19.1.
//
// Not covered: submodule contents (gitlinks are compared by commit only),
// split and sparse indexes (reported as [errors.ErrUnsupported]), SHA-256
// repositories, include.path in configuration files, core.ignoreCase, and
// checkout conversions (attributes and filters are deliberately ignored,
// so files are written byte-for-byte as stored).
package worktree
