// Package goal holds the Goal record, its statuses and budget accounting, and
// decides whether a continuation turn should be dispatched. It decides; the
// session dispatches.
package goal
