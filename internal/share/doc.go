// Package share serves a session to browsers through share links: an HTTP
// adapter over [session.Manager], like package rpc is for Emacs. It holds no
// policy of its own beyond link tiers; every action goes through the
// session's public API ([session.Session.Feedback], [session.Session.Queue],
// [session.Session.Accept]), which keeps "first decision wins" and the
// attempt-id check in one place for every surface.
//
// Contract:
//
//   - The HTTP listener starts on the first [Server.Start] (loopback by
//     default) and serves one page with embedded assets under a strict
//     Content-Security-Policy, plus JSON and Server-Sent-Event endpoints.
//   - A link is http://HOST/s/ROOM#k=SECRET. The secret (128 random bits) is
//     in the fragment, so it never reaches the server in a URL, a log or a
//     Referer; the page sends it in the X-Planbridge-Key header. The server
//     keeps only its SHA-256, compares in constant time, and ignores keys in
//     the query string. Links expire (default one hour); [Server.Stop] kills
//     every link of a session and closes its open streams at once.
//   - Tiers are enforced here, not by the page: view may only read; full may
//     send feedback, queue a prompt and accept when the host's selection is
//     Here; owner may also accept a Worktree selection with a branch, which
//     the session checks exactly as for Emacs, and approve-and-park (POST
//     /s/ROOM/park, naming the settings the page showed; it starts nothing).
//     Settings are never changed from a browser, and a viewer leaving decides
//     nothing.
//   - Live updates: GET /s/ROOM/events?since=SEQ is a text/event-stream that
//     replays the persisted events after SEQ and then the live ones, each
//     with "id: SEQ", so a reconnecting page resumes where it stopped. The
//     page reads it with fetch() and a stream reader because EventSource
//     cannot send the key header.
//   - Every tier sees the proposal as safe HTML and, after a revision, the
//     diff from the previous version ([ApprovalState.Diff], cut at 24 KiB),
//     which the page renders one line per element as text, added and
//     removed lines styled apart; the implementation report, read-only.
//   - Worktree handoff: when a shared session emits "forked", the fork is
//     shared at the same tiers and expiry, each connected page gets an
//     "open" frame with the link of its own tier, and the old room ends
//     with a continuation notice ([Server.Handoff], [Server.HandoffFailed]).
//   - Secrets are never logged; every minted secret is also given to
//     [Config.Redact], so events, stored rows and log lines mask it.
//   - Bounds: a Host header other than a loopback name or address, the
//     listener's own specific address or the host of [Config.BaseURL] is
//     answered 421 (DNS rebinding never reaches a handler). Read, write
//     and idle timeouts close sockets that promise a body and never send
//     it, send nothing, or idle between requests; connections over
//     [Config.MaxConns] in total or [Config.MaxConnsPerAddr] per remote
//     address are closed as soon as they are accepted; headers are at most
//     [MaxHeaderBytes] and action bodies 1 MiB. Event streams are exempt
//     from the request deadlines (each write gets its own, and a heartbeat
//     goes out every 15 s) and capped at [Config.MaxStreamsPerLink] per
//     link (429 too_many_streams). A prompt from a link meets the
//     session's own caps (1 MiB, 16 queued: 413 prompt_too_large, 429
//     queue_full) and runs as an unattended turn: a write to a repository
//     control file is refused, not asked.
//   - Exposure: pages see the repository's name, never the absolute path
//     of the host's checkout (in the state and in every streamed event).
//   - [Server.Following] lists the links serving a session now: after a
//     Worktree handoff, the fork's.
//   - Restarts: rooms and links are written to the store when links are
//     minted and when a room ends (stopped, handoff, handoff failed): the
//     SHA-256 of each secret only, with tier, expiry, room and session,
//     and a handed-off room's continuation. [Server.Close] ends rooms in
//     this process only. [Server.Restore] at startup loads them and listens
//     at once if a link may still come back; with a port-0 listen address
//     the listener first tries its previous port, so old URLs reach it.
//     Unexpired links then work again at their tiers; stopped and expired
//     ones get 410 as before, and the ended room of a handoff answers with
//     its notice. A handoff lets the old room's unexpired links open the
//     fork's room too (inherited links, not listed by [Server.Links]), so
//     that answer also carries an Open link (the fork's room with the
//     presented key) for a page that missed the live "open" frame.
//   - Relay: [Server.StartRelay] shares a session through a relay (package
//     planbridge/relay) instead of this process's listener. planbridge
//     connects out; links are RELAY/r/ROOM#k=SECRET&t=TIER, where the
//     owner secret derives the full one and full the view one (HKDF), so
//     no holder can climb. Every frame is AES-256-GCM sealed end to end
//     under keys derived from the fragment secret (relay.js in the page);
//     every request is opened with its tier's action key, checked against
//     replay (page id and counter) and staleness, and run by the HTTP
//     route's own handler with the route's minimum tier. Relay rooms live
//     in memory only. docs/relay.md is the protocol.
//   - Plain HTTP: the direct page refuses to send its key from an http://
//     origin that is not loopback; a relay must be https:// unless it is
//     on loopback ([CheckRelayURL]).
//
// Without a store, rooms live in memory and a restart forgets them.
package share
