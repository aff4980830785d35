package assistant_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// retryEnv is an assistant whose client retries as the SDK does by
// default (2 retries), against a fake API.
func retryEnv(t *testing.T, opts assistant.Options) (*anthropictest.Server, *assistant.Assistant, *syncBuffer) {
	t.Helper()
	srv := anthropictest.NewServer(t)
	mem, err := conversation.New(memstore.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	a, err := assistant.New(srv.Client(option.WithMaxRetries(2)), mem, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, a, logs
}

// An API that never answers: each attempt gives up after RequestTimeout,
// the client's retries included, and the person gets the timeout sentence.
func TestRequestTimeout(t *testing.T) {
	srv, a, _ := retryEnv(t, assistant.Options{RequestTimeout: 50 * time.Millisecond})
	srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Hang() })
	r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hello?"})
	if !errors.Is(err, apology.ErrTimeout) || r.Text != apology.Timeout {
		t.Fatalf("reply %q, err %v; want the timeout sentence", r.Text, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d attempts, want 3 (2 retries)", n)
	}
}

// With a fallback model, timed-out attempts are tried on it too, once.
func TestRequestTimeoutFallsBack(t *testing.T) {
	srv, a, _ := retryEnv(t, assistant.Options{RequestTimeout: 50 * time.Millisecond, Model: primaryModel, FallbackModel: fallbackModel})
	srv.Respond(func(r anthropictest.Request) anthropictest.Response {
		if r.Params.Model == fallbackModel {
			return anthropictest.Text("Here now.")
		}
		return anthropictest.Hang()
	})
	r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hello?"})
	if err != nil || r.Text != "Here now." || r.Model != fallbackModel {
		t.Fatalf("reply %q from %q, err %v", r.Text, r.Model, err)
	}
}

// The message's deadline bounds everything, however long each attempt may
// take.
func TestMessageTimeout(t *testing.T) {
	srv, a, _ := retryEnv(t, assistant.Options{MessageTimeout: 100 * time.Millisecond})
	srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Hang() })
	r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hello?"})
	if !errors.Is(err, apology.ErrTimeout) || r.Text != apology.Timeout {
		t.Fatalf("reply %q, err %v; want the timeout sentence", r.Text, err)
	}
	if !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err %v does not name the message's deadline", err)
	}
	// The sender's lock was released: the next message goes through.
	srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
	if r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "now?"}); err != nil || r.Text != "ok" {
		t.Fatalf("next message: %q, %v", r.Text, err)
	}
}

// A caller's cancellation is not a timeout of the API.
func TestCallerCancelIsNotTimeout(t *testing.T) {
	srv, a, _ := retryEnv(t, assistant.Options{})
	srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Hang() })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "hello?"})
	if errors.Is(err, apology.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the caller's context error only", err)
	}
}

// Retry-After is honoured up to MaxRetryAfter; a longer one is not waited
// for: the call fails at once with the API's error.
func TestRetryAfterCap(t *testing.T) {
	t.Run("within the cap", func(t *testing.T) {
		srv, a, _ := retryEnv(t, assistant.Options{})
		short := anthropictest.RateLimited()
		short.Header = http.Header{"Retry-After-Ms": {"20"}}
		srv.Enqueue(short, anthropictest.Text("ok"))
		if r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hi"}); err != nil || r.Text != "ok" {
			t.Fatalf("reply %q, err %v", r.Text, err)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("over the cap", func(t *testing.T) {
		srv, a, logs := retryEnv(t, assistant.Options{})
		over := int((assistant.MaxRetryAfter + time.Minute) / time.Second)
		srv.Enqueue(anthropictest.RetryAfter(anthropictest.RateLimited(), over), anthropictest.Text("not asked for"))
		r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hi"})
		if !errors.Is(err, apology.ErrRateLimited) || r.Text != apology.RateLimited {
			t.Fatalf("reply %q, err %v", r.Text, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1: a wait over the cap is not retried", n)
		}
		if !strings.Contains(logs.String(), "longer than the assistant waits") {
			t.Errorf("the log does not say why:\n%s", logs.String())
		}
	})
	t.Run("overloaded over the cap falls back", func(t *testing.T) {
		srv, a, _ := retryEnv(t, assistant.Options{Model: primaryModel, FallbackModel: fallbackModel})
		srv.Enqueue(anthropictest.RetryAfter(anthropictest.Overloaded(), 3600), anthropictest.Text("from the fallback"))
		r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hi"})
		if err != nil || r.Model != fallbackModel {
			t.Fatalf("reply %q from %q, err %v", r.Text, r.Model, err)
		}
	})
}

// Negative bounds are refused.
func TestNegativeTimeouts(t *testing.T) {
	mem, _ := conversation.New(memstore.New(), nil)
	srv := anthropictest.NewServer(t)
	for _, o := range []assistant.Options{{RequestTimeout: -time.Second}, {MessageTimeout: -time.Second}} {
		if _, err := assistant.New(srv.Client(), mem, &o); err == nil {
			t.Errorf("New(%+v) accepted a negative timeout", o)
		}
	}
}
