// Package whatsapp receives messages from the WhatsApp Business Cloud API
// and answers them: an [http.Handler] for Meta's webhook and a small Graph
// API client written on net/http.
//
// The [Server] checks every webhook delivery's X-Hub-Signature-256 against
// the app secret, answers 200 at once and processes the messages in the
// background: one queue per sender, so one person's messages are answered
// one at a time and in order while different people are answered in
// parallel. A message id is answered once ([Dedup], persisted by
// [DedupFile]), messages older than [Config.MaxAge] are skipped, and only
// the family's phone numbers are answered. Text, photos (downloaded from
// the Graph API), button and list replies go to a [Responder]; other kinds
// of message get a short reply saying what the assistant can read. One
// malformed message does not cost the others of its delivery their answer.
// Replies longer than WhatsApp's 4,096 characters (UTF-16 code units, see
// [TextLength]) are split on paragraph, line or word boundaries, and sends
// that meet a temporary error (429, 5xx, a documented temporary Graph code
// such as the pair rate limit) or get no answer at all are retried with
// backoff.
//
// Three seams exist for running several replicas: [Dedup], [Locker] and
// [Queue]. The defaults here are for one process; shared implementations
// (on Redis, for example) make a message answered once ([Dedup]), one
// sender's messages handled one at a time ([Locker]) and in the order
// delivered ([Queue]) across processes.
//
// Package graphtest is a fake Graph API for tests.
package whatsapp
