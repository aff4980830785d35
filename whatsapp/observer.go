package whatsapp

import "net/http"

// Observer hears what the [Server] and the [Client] do with messages and
// replies, for metrics; set it in Config.Observer. Its methods are called
// from their goroutines concurrently, must be safe for concurrent use and
// must not block. They are never given a phone number or a message's text.
type Observer interface {
	// Webhook is called for each POST /webhook: refused is "" for a
	// delivery accepted (200), and otherwise one of the Refused constants.
	Webhook(refused string)
	// MessageSkipped is called for a message that gets no reply; reason
	// is one of the Skip constants.
	MessageSkipped(reason string)
	// MessageRefused is called for each message of a delivery refused
	// because it could not be kept (503): Meta delivers it again.
	MessageRefused()
	// SendAttempt is called after each attempt to send one reply part to
	// the Graph API: sent tells whether it was accepted, retry whether
	// another attempt follows.
	SendAttempt(sent, retry bool)
	// ReplyNotSent is called for a reply part given up on: permanent when
	// the failure will not pass (a temporary one leaves the message in the
	// inbox, to be tried again).
	ReplyNotSent(permanent bool)
}

// Why a message gets no reply, as given to Observer.MessageSkipped.
const (
	SkipNotFamily   = "not_family"   // the sender is not in Config.Family
	SkipOtherNumber = "other_number" // sent to another business number, or to none named
	SkipNoSender    = "no_sender"    // no usable sender
	SkipNoID        = "no_id"        // no message id
	SkipIgnoredKind = "ignored_kind" // a kind that needs no answer (a reaction, say)
	SkipDuplicate   = "duplicate"    // a redelivery of a message already kept
	SkipTooOld      = "too_old"      // older than Config.MaxAge when answered
	SkipUnreadable  = "unreadable"   // unreadable in the inbox
)

// Why a webhook delivery is refused, as given to Observer.Webhook.
const (
	RefusedUnsigned     = "unsigned"      // 401: no signature
	RefusedBadSignature = "bad_signature" // 403: the signature does not match
	RefusedTooLarge     = "too_large"     // 413: over MaxBodyBytes
	RefusedMalformed    = "malformed"     // 400: unreadable body or payload
	RefusedUnavailable  = "unavailable"   // 503: shutting down, or the inbox cannot keep it
	RefusedOther        = "other"         // another status
)

// refusal names the refusal a webhook answer's status means.
func refusal(status int) string {
	switch {
	case status < 300:
		return ""
	case status == http.StatusUnauthorized:
		return RefusedUnsigned
	case status == http.StatusForbidden:
		return RefusedBadSignature
	case status == http.StatusRequestEntityTooLarge:
		return RefusedTooLarge
	case status == http.StatusBadRequest:
		return RefusedMalformed
	case status == http.StatusServiceUnavailable:
		return RefusedUnavailable
	}
	return RefusedOther
}

// statusRecorder remembers the status a handler answers with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// nopObserver is the Observer of a Config without one.
type nopObserver struct{}

func (nopObserver) Webhook(string)         {}
func (nopObserver) MessageSkipped(string)  {}
func (nopObserver) MessageRefused()        {}
func (nopObserver) SendAttempt(bool, bool) {}
func (nopObserver) ReplyNotSent(bool)      {}
