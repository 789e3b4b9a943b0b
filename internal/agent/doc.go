// Package agent runs model turns: the [Engine] interface and its engines
// (script replay and OpenAI-compatible Chat Completions), the tool registry
// with declared metadata, the dispatch gate every tool call passes, and the
// tool executors. It knows nothing about JSON-RPC or HTTP.
package agent
