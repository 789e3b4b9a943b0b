package handoff

import (
	"testing"
	"time"
)

// fakeClock records the timers a Timeout arms; fire runs one as if its
// time had come.
type fakeClock struct {
	armed []time.Duration
	fns   []func()
	real  []*time.Timer
}

func (c *fakeClock) after(d time.Duration, f func()) *time.Timer {
	c.armed = append(c.armed, d)
	c.fns = append(c.fns, f)
	t := time.NewTimer(time.Hour) // a real, never-firing timer: Stop must be callable
	c.real = append(c.real, t)
	return t
}

// TestTimeout: nothing is armed without a duration or a pending card;
// arming again replaces the earlier timer (stopped); a timer fires with
// the attempt it was armed for; Stop disarms.
func TestTimeout(t *testing.T) {
	card := Approval{Attempt: "a-1"}
	for _, c := range []struct {
		name  string
		d     time.Duration
		a     Approval
		armed bool
	}{
		{"armed", time.Minute, card, true},
		{"no duration", 0, card, false},
		{"negative", -time.Second, card, false},
		{"no card", time.Minute, Approval{}, false},
	} {
		clock := &fakeClock{}
		to := Timeout{after: clock.after}
		var got []string
		to.Arm(c.d, c.a, func(a string) { got = append(got, a) })
		if to.Armed() != c.armed || len(clock.armed) != map[bool]int{true: 1}[c.armed] {
			t.Errorf("%s: armed %v (%v)", c.name, to.Armed(), clock.armed)
			continue
		}
		if c.armed {
			clock.fns[0]()
			if len(got) != 1 || got[0] != c.a.Attempt || clock.armed[0] != c.d {
				t.Errorf("%s: fired %v after %v", c.name, got, clock.armed)
			}
		}
	}

	clock := &fakeClock{}
	to := Timeout{after: clock.after}
	var got []string
	expire := func(a string) { got = append(got, a) }
	to.Arm(time.Minute, Approval{Attempt: "a-1"}, expire)
	to.Arm(time.Minute, Approval{Attempt: "a-2"}, expire) // an edit, or a new presentation
	if len(clock.real) != 2 || clock.real[0].Stop() {
		t.Error("the earlier timer was not stopped when armed again")
	}
	clock.fns[1]()
	if len(got) != 1 || got[0] != "a-2" {
		t.Errorf("fired %v, want the current attempt", got)
	}
	to.Stop()
	if to.Armed() || clock.real[1].Stop() {
		t.Error("Stop left the timer armed")
	}
	to.Stop() // stopping a disarmed timeout is fine
	to.Arm(0, Approval{Attempt: "a-3"}, expire)
	if to.Armed() {
		t.Error("armed with no duration")
	}
}

// TestTimeoutFires: with the real clock the timer fires (the only wait is
// for the event, never for a duration).
func TestTimeoutFires(t *testing.T) {
	var to Timeout
	fired := make(chan string, 1)
	to.Arm(time.Nanosecond, Approval{Attempt: "a-1"}, func(a string) { fired <- a })
	if a := <-fired; a != "a-1" {
		t.Fatalf("fired for %q", a)
	}
}

// TestTimeoutSetting: the zero value never times out; a setting holds
// until the next, across goroutines.
func TestTimeoutSetting(t *testing.T) {
	var ts TimeoutSetting
	if d := ts.Duration(); d != 0 {
		t.Fatalf("zero value = %v", d)
	}
	done := make(chan struct{})
	go func() { ts.Set(time.Minute); close(done) }()
	<-done
	if d := ts.Duration(); d != time.Minute {
		t.Fatalf("after Set(1m) = %v", d)
	}
	ts.Set(0)
	var to Timeout
	to.Arm(ts.Duration(), Approval{Attempt: "a-1"}, func(string) {})
	if to.Armed() {
		t.Fatal("a zero setting armed a timeout")
	}
}
