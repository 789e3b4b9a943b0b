package session

import "planbridge/internal/event"

// EventData is the data of one kind of session event: the catalogue is
// package event's ([event.Data], one struct per kind).
type EventData = event.Data

// Event is one entry of a session's event log as published to listeners.
type Event = event.Event
