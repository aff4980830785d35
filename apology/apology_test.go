package apology_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
		{"overloaded", wrap(apology.ErrOverloaded), apology.Overloaded},
		{"rate limited", wrap(apology.ErrRateLimited), apology.RateLimited},
		{"unavailable", wrap(apology.ErrUnavailable), apology.Unavailable},
		{"prompt too long", wrap(apology.ErrPromptTooLong), apology.PromptTooLong},
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
