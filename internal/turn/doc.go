// Package turn executes one model turn of a session: [Req] is a turn
// waiting to run.
package turn
