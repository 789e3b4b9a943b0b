// Package bashclass decides whether a shell command only reads, and runs
// commands it allows without letting them write: it parses with
// mvdan.cc/sh/v3/syntax, classifies every construct and simple command
// against a fixed read-only policy, and executes the same parsed program with
// mvdan.cc/sh/v3/interp, re-checking every expanded argv before it runs.
package bashclass
