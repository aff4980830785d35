package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/mombot/mombot/apology"
)

// ErrorMessage returns what a person reads for an error of
// [Assistant.Handle]: [apology.Message], which every caller uses, so that
// the sentence is chosen in one place.
func ErrorMessage(err error) string { return apology.Message(err) }

// apiError translates the error of a Messages API call into the
// [apology] sentinel for its kind, wrapping both, so that the sentence is
// derived from it and the log keeps the detail. The statuses and types are
// the API's documented ones (https://docs.claude.com/en/api/errors): 529
// overloaded_error, 429 rate_limit_error, 413 request_too_large, 500
// api_error and other 5xx; a 400 invalid_request_error whose message
// starts "prompt is too long" is a conversation over the context window.
// A context error is left as it is; the caller tells the message's
// deadline from the caller's cancellation. Any other error (a refused
// connection, a reset) means the API could not be reached.
func apiError(err error) error {
	var apiErr *anthropic.Error
	switch {
	case errors.As(err, &apiErr):
		switch status := apiErr.StatusCode; {
		case status == 529 || apiErr.Type() == "overloaded_error":
			return fmt.Errorf("%w: %w", apology.ErrOverloaded, err)
		case status == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %w", apology.ErrRateLimited, err)
		case status == http.StatusRequestEntityTooLarge, promptTooLong(apiErr):
			return fmt.Errorf("%w: %w", apology.ErrPromptTooLong, err)
		case status >= 500:
			return fmt.Errorf("%w: %w", apology.ErrUnavailable, err)
		}
		return err // a request the API refused: our fault, Internal
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return fmt.Errorf("%w: %w", apology.ErrUnavailable, err)
}

// promptTooLong reports whether apiErr is the API's 400 for a prompt over
// the model's context window: "prompt is too long: 215000 tokens > 200000
// maximum".
func promptTooLong(apiErr *anthropic.Error) bool {
	if apiErr.StatusCode != http.StatusBadRequest {
		return false
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(body.Error.Message)), "prompt is too long")
}

// fallbackWorthy reports whether a failure of the primary model is one the
// fallback model may not share: the model overloaded (529), the API
// failing with 5xx after the client's retries, or no answer in time.
// Rate limits, refused requests and a prompt too long are the account's
// or the request's and would fail on any model.
func fallbackWorthy(err error) bool {
	return errors.Is(err, apology.ErrOverloaded) || errors.Is(err, apology.ErrUnavailable) || errors.Is(err, apology.ErrTimeout)
}
