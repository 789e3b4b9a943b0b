package session

import "planbridge/internal/event"

// EventData is the data of one kind of session event: the catalogue is
// package event's ([event.Data], one struct per kind).
type EventData = event.Data

// Event is one entry of a session's event log as published to listeners.
type Event = event.Event

// The catalogue's kinds under the names the session's files use (package
// event names them without the suffix).
type (
	ErrorEvent          = event.Error
	NoticeEvent         = event.Notice
	QueuedEvent         = event.Queued
	StatusEvent         = event.Status
	ApprovalClosedEvent = event.ApprovalClosed
	HandoffEvent        = event.Handoff
	HandoffPlan         = event.HandoffPlan
	ParkedStartedEvent  = event.ParkedStarted
	ForkedEvent         = event.Forked
	SummaryEvent        = event.Summary
	ProposalEvent       = event.Proposal
	ReportEvent         = event.Report
	ScopeEvent          = event.Scope
	DiagnosticEvent     = event.Diagnostic
	TodoEvent           = event.Todo
	StepsEvent          = event.Steps
)

// Kind makes a parked plan an event ("parked").
func (ParkedView) Kind() string { return event.KindParked }

// Kind makes the card an event ("approval").
func (ApprovalView) Kind() string { return event.KindApproval }
