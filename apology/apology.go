// Package apology turns an error into the short, kind sentence a person
// reads, in one place, in the manner of wtf's ErrorMessage: callers (the
// assistant, the WhatsApp server, the ask command) send Message(err) and
// keep no apology texts of their own. The log gets the detail; the person
// gets a sentence that says what happened in plain words and, where there
// is one, what to do.
//
// The packages that meet the outside world translate their failures into
// the sentinel errors below at their boundary (package assistant does so
// for the Messages API's statuses, timeouts, refusals and cut-off
// answers), wrapping the original error so that the log keeps it. Message
// knows only these sentinels, the context errors and [RefusalError]; any
// other error reads as [Internal].
//
// The package uses the standard library only, so that every package may
// import it without taking on another's dependencies.
package apology

import (
	"context"
	"errors"
	"strings"
)

// Sentinel errors, each standing for one sentence. Wrap them with the
// detail: fmt.Errorf("%w: %w", apology.ErrOverloaded, apiErr).
var (
	// ErrEmptyMessage: the message has neither text nor a picture.
	ErrEmptyMessage = errors.New("empty message")
	// ErrImageType: the picture is not JPEG, PNG, GIF or WebP.
	ErrImageType = errors.New("unsupported image type")
	// ErrImageTooLarge: the picture is over the API's 5 MB base64 limit.
	ErrImageTooLarge = errors.New("image too large")
	// ErrUnsupported: a kind of message the assistant cannot read (a
	// voice note, a sticker, a location).
	ErrUnsupported = errors.New("unsupported message type")
	// ErrMedia: a picture the person sent could not be fetched.
	ErrMedia = errors.New("media download failed")

	// ErrRefused: the model declined to answer (stop_reason "refusal").
	// A [RefusalError] matches it and carries the API's explanation.
	ErrRefused = errors.New("the model declined to answer")
	// ErrCutOff: the answer was cut off by the output limit or the
	// context window before it was complete.
	ErrCutOff = errors.New("the answer was cut off")
	// ErrTimeout: the model did not answer in time: every attempt timed
	// out, or the message's deadline passed. context.DeadlineExceeded
	// reads the same.
	ErrTimeout = errors.New("no answer in time")
	// ErrOverloaded: the API is overloaded (529 overloaded_error).
	ErrOverloaded = errors.New("the API is overloaded")
	// ErrRateLimited: the account hit a rate limit (429), or the API asked
	// to wait longer than the assistant waits.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: the API failed (5xx) or could not be reached.
	ErrUnavailable = errors.New("the API is unavailable")
	// ErrPromptTooLong: the conversation no longer fits the model's
	// context window (400 "prompt is too long"), or the request is over
	// the API's size limit (413).
	ErrPromptTooLong = errors.New("the prompt is too long")
	// ErrPartial marks a failure after part of the work (a tool round)
	// was done: the sentence for the cause says so too.
	ErrPartial = errors.New("failed partway through")
	// ErrNotSaved: the turn could not be saved (a full disk, a store
	// that is down), so the next message will not remember it, although
	// what its tools did (a list changed) is done.
	ErrNotSaved = errors.New("the conversation could not be saved")
)

// The sentences. They are short, kind, and say nothing about the
// machinery; the log has the detail.
const (
	EmptyMessage  = "I didn't get any text. What can I do for you?"
	ImageType     = "Sorry, I can only look at JPEG, PNG, GIF or WebP pictures. Could you send it as a regular photo?"
	ImageTooLarge = "Sorry, that picture is too big for me (the limit is about 3.7 MB). Could you send a smaller one?"
	Unsupported   = "Sorry, I can only read text messages and photos for now. Please send me your question as text or a photo."
	Media         = "Sorry, I couldn't open that photo. Could you send it again?"
	Refused       = "Sorry, I can't help with that one."
	CutOff        = "Sorry, my answer got cut short. Ask me to go on, or for a shorter answer."
	Timeout       = "Sorry, I'm taking too long to answer right now. Please try again in a minute."
	Overloaded    = "Sorry, I'm very busy right now. Please try again in a few minutes."
	RateLimited   = "Sorry, I've had too many messages just now. Please try again in a minute."
	Unavailable   = "Sorry, I can't reach my brain right now. Please try again in a minute."
	PromptTooLong = "Sorry, that's more than I can read at once. Could you send it in shorter parts?"
	Partial       = "Sorry, I lost my connection partway through. Some of it may already be done; ask me again and I'll pick up from there."
	Internal      = "Sorry, something went wrong on my side. Please try again in a moment."
	NotSaved      = "(I couldn't save our conversation just now, so I may not remember this next time. What I did for you above is done.)"

	// partialNote follows the sentence of a failure that is not a lost
	// connection when part of the work was done.
	partialNote = " Some of what you asked may already be done; ask me what's left."
	// CutOffNote ends a reply whose text was cut off by the output limit,
	// so that the person knows there was more.
	CutOffNote = "[My answer was cut short here. Say \"go on\" for the rest.]"
)

// RefusalError is the model's refusal of a message: stop_reason "refusal"
// with its stop_details. It matches [ErrRefused].
type RefusalError struct {
	// Category is the policy category the API named ("cyber", "bio"),
	// or empty.
	Category string
	// Explanation is the API's human-readable explanation, or empty.
	// It is not guaranteed to be stable.
	Explanation string
}

func (e *RefusalError) Error() string {
	s := ErrRefused.Error()
	if e.Category != "" {
		s += " (" + e.Category + ")"
	}
	return s
}

// Is reports whether target is ErrRefused.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }

// Message returns the sentence a person reads for err, or "" for nil.
func Message(err error) string {
	if err == nil {
		return ""
	}
	s := sentence(err)
	if !errors.Is(err, ErrPartial) {
		return s
	}
	switch s {
	case Unavailable, Timeout, Internal:
		return Partial
	}
	return s + partialNote
}

// sentence returns the sentence for err's cause, leaving ErrPartial aside.
func sentence(err error) string {
	var refusal *RefusalError
	switch {
	case errors.As(err, &refusal):
		if ex := strings.TrimSpace(refusal.Explanation); ex != "" {
			return Refused + " " + ex
		}
		return Refused
	case errors.Is(err, ErrEmptyMessage):
		return EmptyMessage
	case errors.Is(err, ErrImageType):
		return ImageType
	case errors.Is(err, ErrImageTooLarge):
		return ImageTooLarge
	case errors.Is(err, ErrUnsupported):
		return Unsupported
	case errors.Is(err, ErrMedia):
		return Media
	case errors.Is(err, ErrRefused):
		return Refused
	case errors.Is(err, ErrCutOff):
		return CutOff
	case errors.Is(err, ErrPromptTooLong):
		return PromptTooLong
	case errors.Is(err, ErrOverloaded):
		return Overloaded
	case errors.Is(err, ErrRateLimited):
		return RateLimited
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return Timeout
	case errors.Is(err, ErrUnavailable):
		return Unavailable
	case errors.Is(err, ErrNotSaved):
		return NotSaved
	}
	return Internal
}
