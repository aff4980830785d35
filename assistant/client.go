package assistant

import (
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// APIRetries is how many times NewClient's client retries an API call
// after a failure the API says may be retried (429, 5xx, 529, a timed-out
// attempt): the SDK's default, written out because the bound on a
// message's wait counts them (see [DefaultRequestTimeout]).
const APIRetries = 2

// ClientOptions are how [NewClient] reaches the Messages API.
type ClientOptions struct {
	// APIKey is the Claude API key. Required.
	APIKey string
	// BaseURL names another Messages endpoint; "" means the SDK's.
	BaseURL string
	// WrapTransport, if set, wraps the client's HTTP transport (to count
	// tokens for metrics, say).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// NewClient returns the Messages API client that [New] takes: o's key and
// endpoint, APIRetries retries, and nothing from the environment (the
// command reads it, not the SDK).
func NewClient(o ClientOptions) anthropic.Client {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithAPIKey(o.APIKey), option.WithMaxRetries(APIRetries)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	if o.WrapTransport != nil {
		// The SDK's own client, replaced here, bounds the wait for
		// response headers to 10 minutes (requestconfig.DefaultHTTPClient);
		// the wrapped one keeps that bound.
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.ResponseHeaderTimeout = 10 * time.Minute
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: o.WrapTransport(base)}))
	}
	return anthropic.NewClient(opts...)
}
