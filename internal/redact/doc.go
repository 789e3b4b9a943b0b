// Package redact removes known secrets — configured API keys, share-link
// secrets — from text before it is written or sent: error messages, event
// payloads, stored rows, log lines.
//
// Contract:
//
//   - A [Set] holds secrets registered at run time ([Set.Add]); it is safe
//     for concurrent use and its zero value is ready (and redacts nothing).
//   - Every occurrence of a secret — verbatim, JSON-escaped,
//     percent-encoded, or in base64 (standard or URL alphabet, at any of
//     the three byte offsets it can start at inside a longer encoded
//     value) — is replaced by [Mask]. Secrets shorter than [MinLen] bytes are
//     ignored: masking them would mangle ordinary text and they are not
//     secrets worth the name.
//   - [Set.Stream] redacts text that arrives in pieces (a streamed model
//     response): it holds back only what could still become a secret, so a
//     secret split across deltas is masked too, and it never loses text.
//   - [Set.Handler] wraps a [log/slog.Handler] so the message and every
//     string attribute of a record are redacted before they are written.
//
// It imports no project package.
package redact
