// Package acp is a client of the Agent Client Protocol: JSON-RPC 2.0 over
// an agent process's stdio, one JSON object per line. It starts the agent
// in its own process group ([Start]), speaks the protocol's requests
// (initialize, session/new, session/set_mode, session/prompt) and its
// session/cancel notification, and hands every request and notification
// the agent sends back to a [Handler] (session/update,
// session/request_permission, fs/read_text_file, fs/write_text_file,
// terminal/*).
//
// It decides nothing: what a permission request or a file write is allowed
// to do is the caller's policy. The package imports no project package.
//
// # Wire rules
//
//   - A message with a "method" is a request (with an "id") or a
//     notification (without); any other message is a response. Agents' own
//     request ids may be strings (Codex) or integers that collide with the
//     client's ids (Claude Code, Gemini): a request is never matched against
//     the client's pending calls, whatever its id.
//   - A response's id is echoed exactly as the agent sent it (raw JSON).
//   - A line longer than [MaxLine] or that is not JSON ends the connection
//     with an error; the agent is then treated as crashed.
//   - Requests from the agent are served concurrently, each on its own
//     goroutine, with a context cancelled when the connection closes.
//   - Notifications (session/update) are delivered in order, on the reading
//     goroutine, so the caller sees the agent's text in the order it was
//     sent; the handler must not block on the connection.
//
// # Lifecycle
//
// [Start] puts the agent in a new process group and [Process.Close] kills
// that group (SIGTERM, then SIGKILL): Claude Code and Codex do not exit when
// their stdin closes, and leave children behind. Every process the agent
// starts inherits the variable PLANBRIDGE_ACP_AGENT (unique per agent);
// when the agent is closed or dies, every process whose environment holds
// it is killed too, so commands the agent started in groups of their own
// (Claude Code's) do not outlive it. That sweep sees the processes this
// process may inspect (its user's, or all as root) and misses one that
// replaced its environment. [Process.KillOrphans] kills, while the agent
// lives, its marked processes that are no longer below it (a command left
// running when the agent closed the session that started it). The
// agent's stderr goes to
// the writer the caller gives. [Process.Done] is closed when the agent
// exits; [Process.Err] then says how.
package acp
