package sandbox

// archRules are the read-only filter's rules beyond the generic table:
// arm64 has none (no open, stat, fork, pipe or poll; their *at, 2 and
// clone successors are in [readOnlyRules]).
func archRules() []scRule { return nil }
