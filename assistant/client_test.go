package assistant_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/mombot/mombot/assistant"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// NewClient's client sends the key it was given to the endpoint it was
// given, through the wrapped transport, and retries an overloaded API
// APIRetries times: 1 + APIRetries attempts in all.
func TestNewClient(t *testing.T) {
	var attempts, wrapped atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		if got := r.Header.Get("X-Api-Key"); got != "sk-test" {
			t.Errorf("x-api-key %q, want the key given", got)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	}))
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-environment") // not read
	client := assistant.NewClient(assistant.ClientOptions{
		APIKey: "sk-test", BaseURL: srv.URL,
		WrapTransport: func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				wrapped.Add(1)
				return next.RoundTrip(r)
			})
		},
	})
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: assistant.DefaultModel, MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err == nil {
		t.Fatal("an overloaded API answered")
	}
	if got, want := attempts.Load(), int32(1+assistant.APIRetries); got != want {
		t.Errorf("%d attempts, want %d", got, want)
	}
	if wrapped.Load() != attempts.Load() {
		t.Errorf("%d requests through the wrapped transport of %d", wrapped.Load(), attempts.Load())
	}
}
