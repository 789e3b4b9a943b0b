package eventlog

import (
	"sync"

	"planbridge/internal/event"
)

// Listeners is the publisher of many logs ([Config.Publish] is its
// Publish): every event is handed to every listener subscribed when it is
// published, outside its lock, so each sees a session's events in the
// order that session's log publishes them. The zero value has none. Safe
// for concurrent use.
type Listeners struct {
	mu   sync.Mutex // guards the fields below
	fns  map[int]func(event.Event)
	next int
}

// Subscribe registers fn for every event published from now on. It
// returns a function that unsubscribes.
func (l *Listeners) Subscribe(fn func(event.Event)) (cancel func()) {
	l.mu.Lock()
	if l.fns == nil {
		l.fns = map[int]func(event.Event){}
	}
	id := l.next
	l.next++
	l.fns[id] = fn
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.fns, id)
		l.mu.Unlock()
	}
}

// Publish hands ev to every listener.
func (l *Listeners) Publish(ev event.Event) {
	l.mu.Lock()
	fns := make([]func(event.Event), 0, len(l.fns))
	for _, fn := range l.fns {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}
