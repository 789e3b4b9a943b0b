// Package session is the Session aggregate: Plan posture (sticky Plan, its
// episode and reminder cadence), permission mode, the root-workflow owner and
// pending-input queue, and the event log every surface renders. It talks to
// the database only through internal/store and to models only through
// internal/agent.
package session
