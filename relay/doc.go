// Package relay is a content-blind relay for planbridge share links: a
// small HTTP service (`planbridge relay --listen ADDR`) that a person runs
// on any reachable host, so that a share link works beyond the machine
// planbridge runs on while nothing listens there. It imports no project
// package: it moves sealed frames and knows nothing of sessions.
//
// Contract:
//
//   - Rooms are known only by an id, [RoomID] of the host token, which the
//     host derives from the link's owner secret (HKDF). The relay checks a
//     host by recomputing the id from the token it presents
//     ([HostHeader]); it stores no token and no key, so it needs no state
//     to know a room's host, and holds nothing across a restart: a room
//     exists from the host's first request until the host removes it or
//     has been gone for [Config.HostGone].
//   - The relay never sees plaintext. Host→page frames ([Frame]) are
//     {seq, k, c}: a sequence number the host assigns (strictly growing;
//     the relay refuses one that is not), a key label and sealed bytes.
//     Page→host frames are one line of printable ASCII, forwarded as is.
//     Sealing, tiers and replay checks are the host's and the page's (see
//     package planbridge/internal/share and docs/relay.md); the relay can
//     drop, delay or reorder frames but cannot read or forge them.
//   - Held bytes are bounded per room: a ring of the last
//     [Config.RingFrames] host frames (at most [Config.RingBytes]) for
//     pages that reconnect with ?since=SEQ, and [Config.InboxFrames] page
//     frames waiting for the host. Nothing else is kept, and the relay
//     logs room ids and counts only.
//   - Limits: frame size ([Config.MaxFrame]), page frames per second per
//     client address (token bucket), page streams per room and per
//     address, rooms per address and in all, write deadlines on every
//     stream and read deadlines on every body. Client addresses are the
//     TCP peer's; behind a proxy they are the proxy's.
//
// Endpoints: GET /r/ROOM serves the page (as given in [Config.Page]);
// GET /assets/NAME its scripts and styles; the host POSTs /r/ROOM/down (a
// JSON array of frames), holds GET /r/ROOM/inbox (text/event-stream of
// page frames) and DELETEs /r/ROOM; a page reads GET
// /r/ROOM/events?since=SEQ (text/event-stream: the ring after SEQ, then
// "event: live", then live frames, each "id: SEQ"; "event: gone" when the
// room is removed) and POSTs /r/ROOM/send. With [Config.Debug], GET
// /debug/dump returns everything the relay holds (tests grep it).
//
// Why SSE and POST, not WebSocket: the standard library serves both
// cleanly (a WebSocket needs a third-party package or a hand-written
// framing layer), the share page already reads its stream with fetch(),
// and nothing here needs a full-duplex socket: host→page traffic is a
// broadcast that replays from a sequence number, page→host traffic is a
// few small requests.
package relay
