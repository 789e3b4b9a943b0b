// Package anthropictest models, for tests, the request validation of
// Anthropic's Messages API: [Validate] accepts a request body exactly when
// the rules below hold, as the real API enforces them (it answers 400
// invalid_request_error otherwise):
//
//   - model and a positive max_tokens; thinking, if enabled, with a budget of
//     at least 1024 tokens and below max_tokens;
//   - at most four cache_control breakpoints, none on a thinking block;
//   - system blocks are non-empty text; tools have API-legal names and an
//     object input_schema;
//   - messages start with the user, alternate roles, are non-empty, and hold
//     only the block types their role may (user: text, tool_result;
//     assistant: text, thinking, redacted_thinking, tool_use); text blocks
//     are non-empty; thinking blocks carry their signature;
//   - every tool_use (legal id, object input) is answered by a tool_result in
//     the very next user message, tool_result blocks come before any text,
//     and no tool_result answers a call the previous assistant message did
//     not make;
//   - the conversation ends with a user message, and with thinking enabled a
//     final tool_result answers an assistant message that starts with a
//     thinking block.
//
// Not covered: images, documents, server tools, and limits on sizes.
// It imports no project package; production code does not use it.
package anthropictest
