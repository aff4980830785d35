// Package whatsapp receives messages from the WhatsApp Business Cloud API
// and answers them: an [http.Handler] for Meta's webhook and a small Graph
// API client written on net/http.
//
// The [Server] checks every webhook delivery's X-Hub-Signature-256 against
// the app secret, keeps the family's messages in the delivery pipeline
// (package delivery: a durable inbox, the per-sender lock, the record of
// handled ids), answers 200 once they are kept (503 when they cannot be,
// so that Meta delivers them again), and the pipeline answers them in the
// background through this package's handler: it checks a message's age
// (older than [Config.MaxAge]: skipped), downloads a photo, voice note or
// document from the Graph API, asks the [Responder] (the assistant) for the reply, splits a reply
// longer than WhatsApp's 4,096 characters (UTF-16 code units, see
// [TextLength]) on paragraph, line or word boundaries, and sends it,
// retrying with backoff a send that meets a temporary error (429, 5xx, a
// documented temporary Graph code such as the pair rate limit) or gets no
// answer at all. Text, photos, button and list replies, voice notes,
// documents, locations, contact cards and videos' captions go to the
// Responder, with the id of the message they reply to (kinds.go); stickers
// and edit notices get no reply; other kinds of message get a short reply
// saying what the assistant can read. The ids the Graph API gives the
// replies sent are passed to a Responder that is a [SentRecorder]. One malformed message does not cost the others of its delivery
// their answer, and a panic while answering is logged and the sender gets
// an apology.
//
// The path of a message, from POST /webhook to its reply, is the state
// diagram of package delivery.
//
// A [Config.Observer] hears of each webhook (received, or refused and
// why), each message skipped and why, each send attempt and each reply
// given up on, without phone numbers or text: package metrics counts them.
//
// [CheckHealth] is the client of the Server's GET /healthz (mombot
// healthcheck, for container health checks).
//
// Package graphtest is a fake Graph API for tests.
package whatsapp
