package eventlog

import (
	"testing"

	"planbridge/internal/event"
)

// TestListeners: each listener subscribed gets every event in the order
// published; one that unsubscribed gets no more, the others go on; a
// listener may unsubscribe from inside its own call.
func TestListeners(t *testing.T) {
	var l Listeners
	l.Publish(event.Event{Seq: 1}) // nobody listens: nothing happens
	var a, b []int64
	cancelA := l.Subscribe(func(ev event.Event) { a = append(a, ev.Seq) })
	var cancelB func()
	cancelB = l.Subscribe(func(ev event.Event) {
		b = append(b, ev.Seq)
		if ev.Seq == 3 {
			cancelB()
		}
	})
	for seq := int64(2); seq <= 5; seq++ {
		if seq == 5 {
			cancelA()
		}
		l.Publish(event.Event{Seq: seq})
	}
	if got := len(a); got != 3 || a[0] != 2 || a[2] != 4 {
		t.Errorf("the first listener got %v, want [2 3 4]", a)
	}
	if got := len(b); got != 2 || b[0] != 2 || b[1] != 3 {
		t.Errorf("the second listener got %v, want [2 3]", b)
	}
}
