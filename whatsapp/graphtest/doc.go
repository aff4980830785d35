// Package graphtest is a fake of the WhatsApp Cloud API's Graph endpoints
// for tests, in the manner of net/http/httptest: a real HTTP server on the
// loopback interface that package whatsapp, or a mombot process, talks to
// as it would to graph.facebook.com.
//
// It serves the three calls a WhatsApp bot makes:
//
//	POST /{version}/{phone-number-id}/messages  send a message (text only)
//	GET  /{version}/{media-id}                  the media's short-lived URL
//	GET  {that URL}                             the media's bytes
//
// and is strict where the real API is: the bearer token, the API version in
// the path, the phone number id, messaging_product, to, the text body and
// its 4,096-character limit (counted in UTF-16 code units, so an emoji
// counts two) are checked, and a request the real API would
// refuse is refused with the Graph API's error shape:
//
//	{"error": {"message": "...", "type": "OAuthException", "code": 100,
//	           "error_subcode": 33, "fbtrace_id": "..."}}
//
// Every accepted message is recorded ([Server.Sent], [Server.WaitSent]);
// [Server.FailNext] makes the next sends fail with 429 or 5xx, as the real
// API does under load, and [Server.FailNextWith] with a given Graph error
// code (the pair rate limit 131056, say), a Retry-After header, or a
// connection dropped without an answer.
//
// [Sign] signs a webhook delivery as Meta does, for tests that post one.
package graphtest
