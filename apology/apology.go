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
	"fmt"
	"strings"
	"time"
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
	// sticker, a poll, a kind WhatsApp adds later).
	ErrUnsupported = errors.New("unsupported message type")
	// ErrMedia: a picture the person sent could not be fetched. A
	// [MediaError] matches it and names what could not be (a voice note,
	// a document).
	ErrMedia = errors.New("media download failed")

	// ErrVoiceNotSetUp: a voice note came, but no transcription service
	// is configured.
	ErrVoiceNotSetUp = errors.New("voice notes are not set up")
	// ErrVoiceTooLong: the voice note is longer than the configured cap.
	// A [VoiceTooLongError] matches it and carries the cap.
	ErrVoiceTooLong = errors.New("voice note too long")
	// ErrAudioFormat: the audio is not a voice note whose length can be
	// read (WhatsApp records OGG/Opus), or its container is damaged.
	ErrAudioFormat = errors.New("unsupported audio format")
	// ErrTranscription: the transcription service failed, refused the
	// request or did not answer in time.
	ErrTranscription = errors.New("transcription failed")
	// ErrVoiceEmpty: the transcript holds no words (silence, noise).
	ErrVoiceEmpty = errors.New("no words in the voice note")
	// ErrDocumentType: a document of a type the assistant cannot read
	// (not a PDF, nor plain text).
	ErrDocumentType = errors.New("unsupported document type")
	// ErrDocumentTooLarge: a document over the Messages API's limits
	// (the request size, the page count) or over the text the assistant
	// takes.
	ErrDocumentTooLarge = errors.New("document too large")
	// ErrDocumentLocked: a password-protected (encrypted) PDF, which the
	// Messages API does not read.
	ErrDocumentLocked = errors.New("encrypted document")
	// ErrVideo: a video without a caption: there is nothing to read.
	ErrVideo = errors.New("video without a caption")

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
	Unsupported   = "Sorry, I can't read that kind of message. I can read text, photos, voice notes, PDF and text files, locations and contact cards."
	Media         = "Sorry, I couldn't open that photo. Could you send it again?"
	VoiceNotSetUp = "Sorry, I can't listen to voice notes here: they haven't been set up. Please type your message instead."
	AudioFormat   = "Sorry, I can only listen to voice notes recorded in WhatsApp (hold the microphone button). Could you record it that way, or type it?"
	Transcription = "Sorry, I couldn't listen to that voice note just now. Please try again in a minute, or type it."
	VoiceEmpty    = "Sorry, I couldn't make out any words in that voice note. Could you try again, or type it?"
	DocumentType  = "Sorry, I can only read PDF files and plain text files (.txt, .csv, .md). Could you send it as one of those, or paste the text?"
	DocumentLarge = "Sorry, that document is too big for me: I can read up to 100 pages and about 20 MB. Could you send just the pages you need?"
	DocumentLock  = "Sorry, that PDF is password-protected, so I can't open it. Could you send a copy without the password?"
	Video         = "Sorry, I can't watch videos. Tell me in a few words what it shows, or send a photo."
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

// VoiceTooLongError is a voice note over the cap on what is transcribed.
// It matches [ErrVoiceTooLong].
type VoiceTooLongError struct {
	// Duration is the voice note's length, Limit the cap.
	Duration, Limit time.Duration
}

func (e *VoiceTooLongError) Error() string {
	return fmt.Sprintf("%s: %s, the limit is %s", ErrVoiceTooLong, e.Duration.Round(time.Second), e.Limit)
}

// Is reports whether target is ErrVoiceTooLong.
func (e *VoiceTooLongError) Is(target error) bool { return target == ErrVoiceTooLong }

// MediaError is media the person sent that could not be fetched. It
// matches [ErrMedia] and wraps the cause.
type MediaError struct {
	// What is what the person sent, as they would call it: "photo",
	// "voice note", "document". Empty means "photo".
	What string
	Err  error
}

func (e *MediaError) Error() string {
	what := e.What
	if what == "" {
		what = "photo"
	}
	if e.Err == nil {
		return fmt.Sprintf("%s: %s", ErrMedia, what)
	}
	return fmt.Sprintf("%s: %s: %v", ErrMedia, what, e.Err)
}

// Is reports whether target is ErrMedia.
func (e *MediaError) Is(target error) bool { return target == ErrMedia }

// Unwrap returns the cause.
func (e *MediaError) Unwrap() error { return e.Err }

// Unusable reports whether err says that the message itself cannot be
// used: it is empty, or it brings a picture, a voice note, a document or a
// video the assistant cannot take. Such a message is refused before the
// model is asked; any other error is a failure on the way to an answer.
func Unusable(err error) bool {
	for _, sentinel := range []error{
		ErrEmptyMessage, ErrImageType, ErrImageTooLarge,
		ErrVoiceNotSetUp, ErrVoiceTooLong, ErrAudioFormat, ErrTranscription, ErrVoiceEmpty,
		ErrDocumentType, ErrDocumentTooLarge, ErrDocumentLocked, ErrVideo,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

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
	var tooLong *VoiceTooLongError
	var media *MediaError
	switch {
	case errors.Is(err, ErrNotSaved):
		// The store's own error (a timeout, say) is not the person's
		// concern: they got their answer, and it is not remembered.
		return NotSaved
	case errors.As(err, &tooLong):
		return voiceTooLong(tooLong.Limit)
	case errors.As(err, &media) && media.What != "" && media.What != "photo":
		return "Sorry, I couldn't open that " + media.What + ". Could you send it again?"
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
	case errors.Is(err, ErrVoiceNotSetUp):
		return VoiceNotSetUp
	case errors.Is(err, ErrVoiceTooLong):
		return voiceTooLong(0)
	case errors.Is(err, ErrAudioFormat):
		return AudioFormat
	case errors.Is(err, ErrTranscription):
		return Transcription
	case errors.Is(err, ErrVoiceEmpty):
		return VoiceEmpty
	case errors.Is(err, ErrDocumentType):
		return DocumentType
	case errors.Is(err, ErrDocumentTooLarge):
		return DocumentLarge
	case errors.Is(err, ErrDocumentLocked):
		return DocumentLock
	case errors.Is(err, ErrVideo):
		return Video
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
	}
	return Internal
}

// voiceTooLong is the sentence for a voice note over limit; 0 means the
// limit is not known.
func voiceTooLong(limit time.Duration) string {
	if limit <= 0 {
		return "Sorry, that voice note is too long for me. Could you send a shorter one, or type it?"
	}
	return "Sorry, that voice note is too long for me: I can listen to " + spokenDuration(limit) + " at most. Could you send a shorter one, or type it?"
}

// spokenDuration writes d as a person would say it: "3 minutes",
// "90 seconds", "1 minute 30 seconds".
func spokenDuration(d time.Duration) string {
	d = d.Round(time.Second)
	m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
	unit := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case m == 0:
		return unit(s, "second")
	case s == 0:
		return unit(m, "minute")
	}
	return unit(m, "minute") + " " + unit(s, "second")
}
