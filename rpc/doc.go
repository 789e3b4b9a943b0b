// Package rpc is the JSON-RPC 2.0 adapter between Emacs and the session
// layer: Content-Length framing on stdio, one small file per method group
// that decodes params, calls the domain package and encodes the result, and
// the session/event notification stream. It decides no policy.
package rpc
