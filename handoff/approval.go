package handoff

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
)

// ErrStaleAttempt is returned for an action whose attempt id is missing or
// is not the current presentation's. Such an action changes nothing.
var ErrStaleAttempt = errors.New("stale_attempt: this approval card is no longer current")

// NewAttemptID returns a fresh 128-bit random attempt identity.
func NewAttemptID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "a-" + hex.EncodeToString(b[:])
}

// Approval is one presentation of a proposal for decision. The zero value
// is "no pending approval".
type Approval struct {
	Attempt string `json:"attempt"`
	Hidden  bool   `json:"hidden"`
}

// Pending reports whether an approval is presented (shown or hidden).
func (a Approval) Pending() bool { return a.Attempt != "" }

// Check fails closed: a missing or different attempt id, or no pending
// approval at all, is [ErrStaleAttempt]. The comparison is constant-time.
func (a Approval) Check(attempt string) error {
	if a.Attempt == "" || attempt == "" ||
		subtle.ConstantTimeCompare([]byte(a.Attempt), []byte(attempt)) != 1 {
		return ErrStaleAttempt
	}
	return nil
}
