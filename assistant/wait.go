package assistant

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"
)

// How long a message may wait for Claude. Without bounds the SDK gives
// each attempt 10 minutes, tries three times and honours any Retry-After,
// so one hung connection would hold the sender's lock for half an hour.
//
// The bound, for one message, once its sender's turn has come:
//
//   - each attempt of an API call gets at most Options.RequestTimeout
//     (DefaultRequestTimeout, 2 minutes: a full 4096-token answer comes in
//     well under that);
//   - the client's retries (the SDK's default is 2, so 3 attempts) wait
//     between attempts for the SDK's backoff (0.5 s doubling, at most 8 s)
//     or for the API's Retry-After, which is honoured up to MaxRetryAfter;
//     a longer one is not waited for at all: the call fails at once with
//     the API's error, and the person is told to try again later;
//   - an API call that failed for the model's sake (overloaded, 5xx, timed
//     out) is tried once more on Options.FallbackModel, when set, with the
//     same bounds;
//   - the whole message, every API call and tool round included, gets at
//     most Options.MessageTimeout (DefaultMessageTimeout, 5 minutes), after
//     which the person gets the kind sentence for a timeout; saving what
//     was done gets saveTimeout (10 s) more.
//
// So one API call takes at most 3 × RequestTimeout + 2 × MaxRetryAfter,
// twice that with a fallback model, and never more than MessageTimeout.
// With "request_timeout": "2s" and an API that never answers, a message
// gives up after about 3 × 2 s + 1.5 s of backoff (and as much again on a
// fallback model).
const (
	DefaultRequestTimeout = 2 * time.Minute
	DefaultMessageTimeout = 5 * time.Minute
	// MaxRetryAfter is the longest Retry-After the assistant waits for
	// before it tries an API call again.
	MaxRetryAfter = 15 * time.Second
)

// errMessageDeadline is the cause of a message's context when its
// deadline (Options.MessageTimeout) passes.
var errMessageDeadline = errors.New("the message's deadline passed")

// capRetryAfter is an SDK middleware that keeps the SDK from waiting longer
// than MaxRetryAfter between attempts: a response asking for a longer wait
// gets "x-should-retry: false", which the SDK obeys, so the call ends with
// that response's error at once rather than sleeping.
func (a *Assistant) capRetryAfter(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	// The wall clock, not Options.Now: an HTTP date is turned into the
	// SDK's real sleep with time.Until.
	if d, ok := retryAfter(res.Header, time.Now()); ok && d > MaxRetryAfter {
		res.Header.Set("x-should-retry", "false")
		a.log.Warn("assistant: the API asked to wait longer than the assistant waits; not retrying",
			"status", res.StatusCode, "retry_after", d, "max_retry_after", MaxRetryAfter, "request_id", res.Header.Get("request-id"))
	}
	return res, err
}

// retryAfter returns the wait a response asks for, the way the SDK reads
// it: retry-after-ms in milliseconds, else retry-after in seconds or as an
// HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(s * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at.Sub(now), true
	}
	return 0, false
}
