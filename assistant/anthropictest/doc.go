// Package anthropictest is a fake Anthropic Messages API for tests, in the
// manner of net/http/httptest: a real HTTP server on the loopback interface
// that the official SDK talks to as it would to api.anthropic.com.
//
// The fake is strict where the real API is strict. Before it plays a scripted
// response, it checks the request against the API's documented rules and
// answers a request the real API would refuse with the same status, the same
// error type and the same message, in the API's error shape:
//
//	{"type":"error","error":{"type":"invalid_request_error","message":"..."},"request_id":"req_..."}
//
// The rules checked are the headers (x-api-key, anthropic-version), the
// required fields (model, max_tokens, messages), the first message's role,
// empty content, empty or white-space text blocks, tool_use ids answered by
// tool_result blocks in the very next message (and only those), unique
// tool_use ids, a tool_use input that is a JSON object, tool definitions, base64 images (media type and the 5 MB
// limit) and the limit of four cache_control breakpoints. A bug in the code
// under test that the real API would reject so fails the test too.
//
// Responses are scripted with [Server.Enqueue] or computed by a
// [Server.Respond] function, and the requests for one model can be
// answered apart by a [Server.Route] function; all can return errors such as 429, 500 or 529
// with a request-id header and a Retry-After, every stop_reason the API
// documents ([Refusal] with its stop_details, [CutOff], [Paused] with
// server tool blocks, [ContextWindowExceeded]), or [Hang], a request never
// answered. [Cassette] replays response bodies recorded from the real API
// (the SDK's cassettes), so that tests are pinned to the real shapes and
// not only to the fake's. A response that scripts no usage gets the usage
// of the fake's model of the prompt cache (cache.go), which follows the
// documented rules: the prompt is tools, then system, then messages; an
// entry is the exact prefix up to a block with cache_control (the
// top-level cache_control puts one on the last block); each breakpoint is
// looked up at its block and up to 20 blocks before it and the longest hit
// is read; a prefix under the model's minimum ([MinCacheableTokens]) is
// never written; an entry lives 5 minutes, or an hour with "ttl":"1h",
// refreshed on every hit; a 1h breakpoint after a 5m one is refused as the
// API refuses it. The usage reports input_tokens,
// cache_creation_input_tokens with its cache_creation split by lifetime,
// and cache_read_input_tokens, on tokens estimated at 4 bytes of JSON per
// block, and output_tokens, estimated so from the response's content. The cache runs on the clock [Server.SetNow] sets, so a test can
// let six minutes pass without sleeping. A prompt over the context window
// ([Server.SetContextWindow]) gets the API's 400 "prompt is too long".
// Every request is recorded, body bytes included,
// so tests can assert on exactly what was sent ([Server.Requests]).
package anthropictest
