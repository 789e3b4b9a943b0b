// Package store persists planbridge state: one SQLite database (WAL,
// synchronous=FULL, busy_timeout, immediate write transactions, numbered
// migrations) and atomically written artifact files. It knows tables and
// files, not business rules.
//
// File modes: [Open] makes the state directory 0700 and state.db with its
// -wal and -shm files 0600, whatever the umask and whatever modes a
// pre-existing directory or database had, and refuses a state directory,
// a symlink naming it or a database file that another user owns (their
// owner keeps full access whatever the mode). A proposal row keeps the
// proposal's body beside its hash. Parked plans and approval outcomes have
// their own tables; [Acceptance.Parked] lets a parked plan start once.
// Durability boundaries are named: every write transaction runs through
// [Store.Commit] with an operation name (OpPrompt, OpTurn, OpAcceptance,
// OpDispatch, OpHandOver, …), and [WithFailingCommits] (the server reads
// it from PLANBRIDGE_STORE_FAIL) makes the named ones fail with ENOSPC, as
// a full disk would, before anything is written.
//
// One server per state directory: [Lock] takes an exclusive flock on
// <dir>/serve.lock (holding the owner's pid); a second taker gets a
// [*LockError] naming it. Damage is detected, never papered over:
// [Preflight] (before [Open] creates anything) and [Store.Check] refuse a
// database that is missing or empty while session directories exist, one
// without rows for sessions whose directories exist (a lost -wal), or one
// failing SQLite's quick_check, with a [*DamageError]; they change no file.
// Every session has a directory <dir>/sessions/<id>, created after its
// row is committed, which is what makes a database that lost its newest
// commits detectable; [Store.DeleteSession] removes both in the order that
// keeps it so (the directory aside, the rows, the files). Values kept per
// session ([Store.PutValue]: the script engine's positions) are rows of
// the session, deleted in that transaction and written only while its
// row exists.
package store
