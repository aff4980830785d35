// Package whatsapp is the WhatsApp Business Cloud API's side of the
// service: the webhook where Meta posts the family's messages, and a small
// Graph API client, written on net/http, that reads what they carry and
// sends the replies. It knows nothing of the assistant.
//
// A message passes through it twice, on the path that docs/architecture.md
// draws:
//
//   - The [Server], an [http.Handler], checks every webhook delivery's
//     X-Hub-Signature-256 against the app secret, keeps the messages from
//     the family to the business number (others, and kinds that need no
//     answer such as stickers and edit notices, are logged and left) and
//     hands each to its [Queue] (a delivery.Pipeline: a durable inbox, the
//     per-sender lock, the record of handled ids). It answers 200 once they
//     are kept, and 503 when they cannot be, so that Meta delivers them
//     again.
//   - The [Client] is what the Queue's handler uses once a message's turn
//     has come. [Client.Inbound] reads the message kept: it skips one older
//     than [Config.MaxAge] or unreadable ([ErrNoReply]), downloads a photo,
//     voice note or document, and returns it for the assistant, or an
//     error whose apology is the reply when the assistant cannot be asked
//     (a kind it cannot read, media that cannot be fetched).
//     [Client.Send] sends a reply's parts ([Split] cuts a reply longer than
//     WhatsApp's 4,096 characters, in UTF-16 code units, on
//     paragraph, line or word boundaries), retrying with backoff a send
//     that meets a temporary error (429, 5xx, a documented temporary Graph
//     code such as the pair rate limit) or gets no answer at all, and
//     returns the ids WhatsApp gave the parts, so that a later reply
//     quoting one can be given its text.
//
// Text, photos, button and list replies, voice notes, documents,
// locations, contact cards and videos' captions reach the assistant, with
// the id of the message they reply to (kinds.go). One malformed message
// does not cost the others of its delivery their answer.
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
