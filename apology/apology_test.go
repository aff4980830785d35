package apology_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
)

func TestMessage(t *testing.T) {
	wrap := func(sentinel error) error {
		return fmt.Errorf("assistant: handle: %w: %w", sentinel, errors.New("detail"))
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"unknown error", errors.New("disk full"), apology.Internal},
		{"empty", wrap(apology.ErrEmptyMessage), apology.EmptyMessage},
		{"image type", wrap(apology.ErrImageType), apology.ImageType},
		{"image too large", wrap(apology.ErrImageTooLarge), apology.ImageTooLarge},
		{"unsupported", apology.ErrUnsupported, apology.Unsupported},
		{"media", wrap(apology.ErrMedia), apology.Media},
		{"refused", wrap(apology.ErrRefused), apology.Refused},
		{"refusal with explanation", fmt.Errorf("x: %w", &apology.RefusalError{Category: "bio", Explanation: " Declined. "}), apology.Refused + " Declined."},
		{"refusal without explanation", &apology.RefusalError{Category: "bio"}, apology.Refused},
		{"cut off", wrap(apology.ErrCutOff), apology.CutOff},
		{"timeout", wrap(apology.ErrTimeout), apology.Timeout},
		{"context deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), apology.Timeout},
		{"not saved", wrap(apology.ErrNotSaved), apology.NotSaved},
		{"not saved: the store timed out", fmt.Errorf("x: %w: %w", apology.ErrNotSaved, context.DeadlineExceeded), apology.NotSaved},
		{"overloaded", wrap(apology.ErrOverloaded), apology.Overloaded},
		{"rate limited", wrap(apology.ErrRateLimited), apology.RateLimited},
		{"unavailable", wrap(apology.ErrUnavailable), apology.Unavailable},
		{"prompt too long", wrap(apology.ErrPromptTooLong), apology.PromptTooLong},
		{"photo not fetched", wrap(&apology.MediaError{Err: errors.New("404")}), apology.Media},
		{"voice note not fetched", wrap(&apology.MediaError{What: "voice note", Err: errors.New("404")}), "Sorry, I couldn't open that voice note. Could you send it again?"},
		{"voice not set up", wrap(apology.ErrVoiceNotSetUp), apology.VoiceNotSetUp},
		{"voice too long, 3m", wrap(&apology.VoiceTooLongError{Duration: 200 * time.Second, Limit: 3 * time.Minute}),
			"Sorry, that voice note is too long for me: I can listen to 3 minutes at most. Could you send a shorter one, or type it?"},
		{"voice too long, 90s", wrap(&apology.VoiceTooLongError{Duration: 100 * time.Second, Limit: 90 * time.Second}),
			"Sorry, that voice note is too long for me: I can listen to 1 minute 30 seconds at most. Could you send a shorter one, or type it?"},
		{"voice too long, 1m", wrap(&apology.VoiceTooLongError{Duration: 100 * time.Second, Limit: time.Minute}),
			"Sorry, that voice note is too long for me: I can listen to 1 minute at most. Could you send a shorter one, or type it?"},
		{"voice too long, 45s", wrap(&apology.VoiceTooLongError{Limit: 45 * time.Second}),
			"Sorry, that voice note is too long for me: I can listen to 45 seconds at most. Could you send a shorter one, or type it?"},
		{"voice too long, no limit known", wrap(apology.ErrVoiceTooLong),
			"Sorry, that voice note is too long for me. Could you send a shorter one, or type it?"},
		{"audio format", wrap(apology.ErrAudioFormat), apology.AudioFormat},
		{"transcription", wrap(apology.ErrTranscription), apology.Transcription},
		{"voice empty", wrap(apology.ErrVoiceEmpty), apology.VoiceEmpty},
		{"document type", wrap(apology.ErrDocumentType), apology.DocumentType},
		{"document too large", wrap(apology.ErrDocumentTooLarge), apology.DocumentLarge},
		{"document locked", wrap(apology.ErrDocumentLocked), apology.DocumentLock},
		{"video", wrap(apology.ErrVideo), apology.Video},
		// Partway through: a lost connection says so; any other cause
		// keeps its sentence and adds that some may be done.
		{"partial, unavailable", fmt.Errorf("%w: %w", apology.ErrPartial, wrap(apology.ErrUnavailable)), apology.Partial},
		{"partial, timeout", fmt.Errorf("%w: %w", apology.ErrPartial, wrap(apology.ErrTimeout)), apology.Partial},
		{"partial, unknown", fmt.Errorf("%w: %w", apology.ErrPartial, errors.New("400")), apology.Partial},
		{"partial, overloaded", fmt.Errorf("%w: %w", apology.ErrPartial, wrap(apology.ErrOverloaded)), apology.Overloaded + " Some of what you asked may already be done; ask me what's left."},
		{"partial, prompt too long", fmt.Errorf("%w: %w", apology.ErrPartial, wrap(apology.ErrPromptTooLong)), apology.PromptTooLong + " Some of what you asked may already be done; ask me what's left."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apology.Message(tt.err); got != tt.want {
				t.Errorf("Message(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestRefusalErrorIsErrRefused(t *testing.T) {
	err := fmt.Errorf("handle: %w", &apology.RefusalError{Category: "cyber"})
	if !errors.Is(err, apology.ErrRefused) {
		t.Errorf("%v is not ErrRefused", err)
	}
	if errors.Is(err, apology.ErrCutOff) {
		t.Errorf("%v is ErrCutOff", err)
	}
}

func ExampleMessage() {
	err := fmt.Errorf("assistant: handle: %w: 529 Overloaded", apology.ErrOverloaded)
	fmt.Println(apology.Message(err))
	// Output: Sorry, I'm very busy right now. Please try again in a few minutes.
}

func TestTypedErrorsMatchTheirSentinels(t *testing.T) {
	long := fmt.Errorf("x: %w", &apology.VoiceTooLongError{Duration: time.Hour, Limit: time.Minute})
	if !errors.Is(long, apology.ErrVoiceTooLong) || errors.Is(long, apology.ErrMedia) {
		t.Errorf("VoiceTooLongError: Is(ErrVoiceTooLong) = %v, Is(ErrMedia) = %v", errors.Is(long, apology.ErrVoiceTooLong), errors.Is(long, apology.ErrMedia))
	}
	cause := errors.New("connection reset")
	media := fmt.Errorf("x: %w", &apology.MediaError{What: "document", Err: cause})
	if !errors.Is(media, apology.ErrMedia) || !errors.Is(media, cause) {
		t.Errorf("MediaError: Is(ErrMedia) = %v, Is(cause) = %v", errors.Is(media, apology.ErrMedia), errors.Is(media, cause))
	}
}

// Unusable tells the messages refused for what they bring from the
// failures on the way to an answer, through wrapping.
func TestUnusable(t *testing.T) {
	for _, err := range []error{
		apology.ErrEmptyMessage, apology.ErrImageType, apology.ErrImageTooLarge,
		apology.ErrVoiceNotSetUp, &apology.VoiceTooLongError{Limit: time.Minute}, apology.ErrAudioFormat, apology.ErrTranscription, apology.ErrVoiceEmpty,
		apology.ErrDocumentType, apology.ErrDocumentTooLarge, apology.ErrDocumentLocked, apology.ErrVideo,
	} {
		if wrapped := fmt.Errorf("assistant: handle: %w", err); !apology.Unusable(wrapped) {
			t.Errorf("Unusable(%v) = false, want true", wrapped)
		}
	}
	for _, err := range []error{
		nil, errors.New("disk full"), apology.ErrTimeout, apology.ErrOverloaded, apology.ErrRefused, apology.ErrMedia,
		apology.ErrUnsupported, apology.ErrNotSaved, context.Canceled,
	} {
		if apology.Unusable(err) {
			t.Errorf("Unusable(%v) = true, want false", err)
		}
	}
}
