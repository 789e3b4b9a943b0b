// Package handoff turns an accepted proposal into implementation through
// durable steps: validation, archive, retry record, context preparation,
// optional Worktree fork, and kickoff. Each step is committed before the next
// starts so a crash resumes exactly once.
package handoff
