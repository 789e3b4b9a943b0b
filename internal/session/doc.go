// Package session is the Session aggregate: Plan posture (sticky Plan, its
// episode and reminder cadence), permission mode, the root-workflow owner and
// pending-input queue, and the event log every surface renders. It talks to
// the database only through internal/store and to models only through
// internal/agent.
//
// A person's input is bounded the same way on every surface: a prompt is
// at most [MaxPromptBytes] ([CodePromptTooLarge]) and at most [MaxQueued]
// prompts wait in the queue ([CodeQueueFull]). A prompt from a share link
// ([Session.QueueGuest]) and an automatic Goal continuation run as
// unattended turns ([agent.Gate.Unattended]). The published proposal's body
// is stored with its hash and is what every surface shows and acceptance
// archives; a plan file changed on disk is flagged, never trusted. With
// [Config.Redact], events and transcript rows are masked before they are
// stored or published.
package session
