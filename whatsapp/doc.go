// Package whatsapp receives messages from the WhatsApp Business Cloud API
// and answers them: an [http.Handler] for Meta's webhook and a small Graph
// API client written on net/http.
//
// The [Server] checks every webhook delivery's X-Hub-Signature-256 against
// the app secret, puts its messages in a durable [Queue] ([QueueFile] on
// disk, or one shared by replicas), answers 200 once they are kept there
// (503 when they cannot be, unless [Config.MemoryFallback] holds them in
// memory), and answers them in the background: one sender's messages one at a time
// and in order, different senders in parallel. A message leaves the Queue
// only once its reply is sent and its id recorded as handled ([Dedup],
// persisted by [DedupFile]), so a message acknowledged to Meta is answered
// even if the process dies meanwhile: at least once, and exactly once
// unless it dies between sending a reply and recording it. While the Dedup
// or the Queue fails to record an answered message, the process remembers
// it and does not answer it again; a reply the Graph API refuses for a
// passing reason stays queued and is sent at a later pass. On start, and
// every minute, the Server looks for messages left queued. Messages older
// than [Config.MaxAge] are skipped, and only the family's phone numbers are
// answered. Text, photos (downloaded from the Graph API), button and list
// replies go to a [Responder]; other kinds of message get a short reply
// saying what the assistant can read. One malformed message does not cost
// the others of its delivery their answer, and a panic while answering is
// logged and the sender gets an apology. Replies longer than WhatsApp's
// 4,096 characters (UTF-16 code units, see [TextLength]) are split on
// paragraph, line or word boundaries, and sends that meet a temporary error
// (429, 5xx, a documented temporary Graph code such as the pair rate limit)
// or get no answer at all are retried with backoff.
//
// Three seams exist for running several replicas: [Dedup], [delivery.Locker] and
// [Queue]. The defaults here are for one process; shared implementations
// (on Redis, for example) make a message answered once ([Dedup]), one
// sender's messages handled one at a time ([delivery.Locker], which tells its holder
// when it lost the lock) and in the order delivered ([Queue]) across
// processes, and let one replica answer what another left when it died.
//
// Package graphtest is a fake Graph API for tests.
package whatsapp
