// Package sessioninfo is the client-facing summary of a session
// ([Info]): what every surface lists (session/list, the share page), the
// answer to session/open, and what a status event carries ([Info.Status]).
//
// [FromRow] is what the session row alone holds; a live session
// completes it from its parts under its lock (the queue, the card, the
// Goal, the tracked plan, the log's last number). [Stored] is the summary
// of a session not loaded in this process, read from the store without
// changing anything, as opening it would show it: a proposal that
// opening would demote (Plan off, or its plan file no longer matching its
// hash) is reported as a draft, one it would present again as shown; an
// active Goal as paused by the restart; a session whose files an
// interrupted delete set aside as stored, unjudged (opening it is
// refused until they are back).
//
// It imports the store and the parts' stored readers (goalrun, tracking,
// the work:// artifact check of handoff), nothing of the session.
package sessioninfo
