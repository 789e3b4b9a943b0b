// Package store persists planbridge state: one SQLite database (WAL,
// synchronous=FULL, busy_timeout, immediate write transactions, numbered
// migrations) and atomically written artifact files. It knows tables and
// files, not business rules.
//
// File modes: [Open] makes the state directory 0700 and state.db with its
// -wal and -shm files 0600, whatever the umask and whatever modes a
// pre-existing directory or database had. A proposal row keeps the
// proposal's body beside its hash.
package store
