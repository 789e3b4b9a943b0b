// Package rpc is the JSON-RPC 2.0 adapter between Emacs and the session
// layer: Content-Length framing on stdio, one small file per method group
// that decodes params, calls the domain package and encodes the result, and
// the session/event notification stream. It decides no policy.
//
// Framing is bounded and forgiving: header lines are at most
// [MaxHeaderLine] bytes, bodies at most [Options.MaxFrame]
// ([DefaultMaxFrame]); anything larger is read through without being
// buffered and answered with an error (data.code [CodeFrameTooLarge], with
// the request's id when a streaming scan finds it). After a malformed
// header the reader resynchronises on the next header line, even inside a
// line, so later requests get their own answers. Request ids are echoed
// exactly as sent (any JSON number or string), which jsonrpc2 alone cannot
// do: each id travels through it as an opaque string holding the raw JSON.
//
// Answers are written by the adapter itself, not by jsonrpc2, which would
// marshal each result three times over: a result is encoded once, so a
// long session/open (a megabyte of transcript) costs one encoding.
package rpc
