// Package proposal extracts <proposed_plan> blocks from assistant text, in one
// piece or streamed, diagnoses malformed ones, and gives a proposal's
// structure and safe renderings. It never persists anything.
package proposal
