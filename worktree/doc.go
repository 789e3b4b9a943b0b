// Package worktree inspects git checkouts (HEAD, refs, a status walk) and
// creates linked worktrees without running any repository helper: no hooks,
// no filters, no fsmonitor.
package worktree
