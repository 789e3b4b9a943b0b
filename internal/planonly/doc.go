// Package planonly runs one Plan turn with no client attached and reports
// its proposal ([Run], what `planbridge plan` prints). It drives a session
// only through the exported API of package session (create, enter Plan,
// queue the prompt, wait, read the event log and the proposal), and names
// no acceptance, park, start, retry or recovery entry point, so nothing it
// does can start an implementation: the turn's only effects are Plan's
// (read-only tools, read-only shell, work:// notes). What it reports of
// the turn's events is [Digest]'s.
package planonly
