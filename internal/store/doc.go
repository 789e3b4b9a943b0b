// Package store persists planbridge state: one SQLite database (WAL,
// synchronous=FULL, busy_timeout, immediate write transactions, numbered
// migrations) and atomically written artifact files. It knows tables and
// files, not business rules.
package store
