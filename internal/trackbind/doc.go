// Package trackbind binds an implementation's [review.Tracker] to the
// agent (package internal/agent): the adapter between the two, which
// neither domain package may hold, since review knows no agent and the
// agent knows no plan. It owns no state and persists nothing; a
// [Binding] is built from the session's tracker, its tool registry and
// its roots whenever one is needed (by package internal/tracking, which
// owns the tracker and binds it to the session).
//
// Its contract:
//   - A tool call is seen by the tracker ([Binding.Call]) with its bash
//     command, if any, and the paths its tool declares it writes
//     ([agent.Meta.Writes], looked up in the session's registry, never by
//     the tool's name); a tool that declares nothing, or whose arguments
//     cannot be read, declares no writes.
//   - The gate holds the tracker's scope ([Binding.Scope]) for a non-Plan
//     turn while the implementation is not done ([review.Tracker.Holding]),
//     nothing otherwise; a turn's unconfined shell commands are watched
//     ([Binding.Watcher], [review.Tracker.Watch]) exactly while it does.
//   - A call the person allowed extends the scope ([Binding.Extend]) by
//     the workspace files it really writes, as the gate resolved them
//     ([agent.WriteTarget.Rel]: symlinks followed); notes, the published
//     plan, protected paths and paths outside the workspace never.
//   - Each completed call is logged ([Binding.LogTool]); what it declares
//     it writes is looked up only while an implementation is logged.
//   - The tracker's tools are offered as session-only agent tools
//     ([Tools]): the gate lets them run in Plan and the watcher never
//     observes them.
//   - A question about what a command already changed outside the scope
//     reaches the person's asker marked [AskScopeEffects] ([Asker],
//     [AskKind]), so a surface can say that allowing extends the scope
//     and denying restores.
package trackbind
