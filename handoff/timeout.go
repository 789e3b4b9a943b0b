package handoff

import (
	"sync"
	"time"
)

// Timeout is an approval card's timeout. It is armed for one attempt,
// at most one at a time: arming again (a new presentation, a change of
// the card's settings: the person is deciding) starts it over, and
// closing the card stops it. A duration of zero or less, or no pending
// card, arms nothing. When it fires, expire receives the attempt it was
// armed for; whoever closes the card checks that attempt is still the
// current one (a stop can race a timer that already fired).
//
// The zero value is disarmed. A Timeout is not safe for concurrent use:
// the session holds its lock around it.
type Timeout struct {
	t *time.Timer
	// after arms a timer; nil is [time.AfterFunc] (tests fake the clock).
	after func(time.Duration, func()) *time.Timer
}

// Arm starts the timeout of a, replacing any earlier one.
func (t *Timeout) Arm(d time.Duration, a Approval, expire func(attempt string)) {
	t.Stop()
	if d <= 0 || !a.Pending() {
		return
	}
	after := t.after
	if after == nil {
		after = time.AfterFunc
	}
	attempt := a.Attempt
	t.t = after(d, func() { expire(attempt) })
}

// Stop disarms the timeout.
func (t *Timeout) Stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

// Armed reports whether a timeout is armed.
func (t *Timeout) Armed() bool { return t.t != nil }

// TimeoutSetting is how long an approval card may stay undecided before
// its [Timeout] closes it, as a client configures it for every session
// from now on (zero, the zero value: never). Safe for concurrent use.
type TimeoutSetting struct {
	mu sync.Mutex
	d  time.Duration
}

// Set sets the duration (zero or less: never).
func (t *TimeoutSetting) Set(d time.Duration) {
	t.mu.Lock()
	t.d = d
	t.mu.Unlock()
}

// Duration is the duration a card presented now gets.
func (t *TimeoutSetting) Duration() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d
}
