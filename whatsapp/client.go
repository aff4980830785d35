package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mombot/mombot/internal/origin"
)

// APIError is an error answer of the Graph API, in its documented shape:
//
//	{"error": {"message": "...", "type": "OAuthException", "code": 190,
//	           "error_subcode": 460, "fbtrace_id": "..."}}
type APIError struct {
	StatusCode int    // the HTTP status
	Message    string `json:"message"`
	Type       string `json:"type"`
	Code       int    `json:"code"`
	Subcode    int    `json:"error_subcode"`
	FBTraceID  string `json:"fbtrace_id"`
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("graph api: HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("graph api: HTTP %d: %s (code %d)", e.StatusCode, e.Message, e.Code)
}

// Temporary reports whether the request may succeed if sent again: HTTP 429
// and 5xx, and the Graph error codes documented as temporary: 1 (unknown,
// possibly a server error), 2 (service temporarily unavailable), 4 and 17
// (too many calls), 341 (application limit), 80007 and 130429 (rate and
// throughput limits), 131000 (something went wrong), 131056 (too many
// messages to one number in a short time: the pair rate limit) and 133004
// (server temporarily unavailable). 131048, the spam rate limit, is not:
// it follows the number's quality rating and does not lift in minutes.
func (e *APIError) Temporary() bool {
	if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
		return true
	}
	switch e.Code {
	case 1, 2, 4, 17, 341, 80007, 130429, 131000, 131056, 133004:
		return true
	}
	return false
}

// transportError is a request that got no answer: the connection failed,
// was closed, or timed out.
type transportError struct{ err error }

func (e *transportError) Error() string { return "graph api: no answer: " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// Limits of the retries of one send.
const (
	// maxBackoff caps one wait between attempts.
	maxBackoff = 30 * time.Second
	// retryBudget caps the waits of one send, all together. With the
	// defaults (6 attempts, 2s doubling) the backoff alone needs at most
	// 2+4+8+16+30 s; a Retry-After that would overrun it ends the retries
	// instead.
	retryBudget = time.Minute
)

// graphClient makes the few Graph API calls the [Client] needs. The access
// token goes only into the Authorization header, never into a URL, an
// error or a log line.
type graphClient struct {
	http          *http.Client
	base          string   // scheme://host, no trailing slash
	baseURL       *url.URL // base, parsed
	version       string
	phoneNumberID string
	token         string
	maxAttempts   int
	retryDelay    time.Duration
	maxMedia      int64
	// obs hears of each send attempt; nil means none.
	obs Observer
	// sleep waits d or until ctx is done; nil means a timer. Tests
	// replace it so that they do not wait.
	sleep func(ctx context.Context, d time.Duration) error
	// stopping, when closed, cuts the waits between attempts to
	// shutdownRetryWait: at shutdown a reply that cannot be sent soon
	// waits in the inbox for the next start, rather than holding the
	// process for the backoff. nil means never.
	stopping <-chan struct{}
}

// errStopping ends a wait to retry once the server shuts down.
var errStopping = errors.New("the server is shutting down")

// sendText sends body as one text message to the WhatsApp id to and
// returns the id WhatsApp gave it (a "wamid."), read from the answer
// {"messaging_product": "whatsapp", "contacts": [...], "messages": [{"id": ...}]};
// "" if the answer has none, which is not an error: the message was sent.
// It retries what may succeed later, a temporary Graph API error or a
// request that got no answer at all, up to maxAttempts times, waiting with
// exponential backoff and jitter, or as long as the server's Retry-After
// asks, while ctx allows and the waits stay within retryBudget. A retry
// after a timeout may deliver a message twice, if the first attempt did
// arrive; a lost reply is the worse outcome.
func (c *graphClient) sendText(ctx context.Context, to, body string) (string, error) {
	payload, err := json.Marshal(map[string]any{
		"messaging_product": "whatsapp",
		"recipient_type":    "individual",
		"to":                to,
		"type":              "text",
		"text":              map[string]any{"preview_url": false, "body": body},
	})
	if err != nil {
		return "", err
	}
	endpoint := c.base + "/" + c.version + "/" + url.PathEscape(c.phoneNumberID) + "/messages"
	obs := c.obs
	if obs == nil {
		obs = nopObserver{}
	}
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		wait, answer, err := c.post(ctx, endpoint, payload)
		if err == nil {
			obs.SendAttempt(true, false)
			return sentID(answer), nil
		}
		retry := retryable(ctx, err) && attempt < c.maxAttempts
		if retry && wait <= 0 {
			wait = c.backoff(attempt)
		}
		retry = retry && waited+wait <= retryBudget
		obs.SendAttempt(false, retry)
		if !retryable(ctx, err) || attempt >= c.maxAttempts {
			if attempt > 1 {
				return "", fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return "", err
		}
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		if waited+wait > retryBudget {
			return "", fmt.Errorf("after %d attempts: %w (gave up: a retry in %v would wait more than %v in all)", attempt, err, wait.Round(time.Second), retryBudget)
		}
		waited += wait
		if werr := c.wait(ctx, wait); werr != nil {
			return "", fmt.Errorf("%w (gave up waiting to retry: %v)", err, werr)
		}
	}
}

// sentID reads the message id from the answer to a send.
func sentID(answer []byte) string {
	var a struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if json.Unmarshal(answer, &a) != nil || len(a.Messages) == 0 {
		return ""
	}
	return a.Messages[0].ID
}

// retryable reports whether a failed send may be tried again.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false // our own deadline or shutdown, not the network
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Temporary()
	}
	var tErr *transportError
	return errors.As(err, &tErr)
}

// shutdownRetryWait is the longest wait for a retry once the server shuts
// down; a longer one leaves the reply in the inbox for the next start.
const shutdownRetryWait = time.Second

// wait sleeps d, or less if ctx ends first, in which case it returns the
// context's cause. Once the server shuts down (stopping is closed) it
// returns errStopping instead of waiting more than shutdownRetryWait.
func (c *graphClient) wait(ctx context.Context, d time.Duration) error {
	stopping := c.stopping
	select {
	case <-stopping:
		if d > shutdownRetryWait {
			return errStopping
		}
		stopping = nil
	default:
	}
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	end := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-stopping:
			if time.Until(end) > shutdownRetryWait {
				return errStopping
			}
			stopping = nil // a short wait ends as planned
		case <-t.C:
			return nil
		}
	}
}

// post sends one request and returns the answer's body (at most 64 KiB)
// on success; on a temporary failure it also returns how long the server
// asked us to wait, if it did.
func (c *graphClient) post(ctx context.Context, endpoint string, payload []byte) (time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, &transportError{stripURL(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		// A body cut short is no failure: the message was sent.
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return 0, answer, nil
	}
	return retryAfter(resp.Header.Get("Retry-After"), time.Now()), nil, readAPIError(resp)
}

func (c *graphClient) backoff(attempt int) time.Duration {
	d := c.retryDelay
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	// Full jitter on the upper half, so that replicas retrying together
	// spread out.
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header, given in seconds or as an HTTP
// date (relative to now); it returns 0 when there is none or it is in the
// past.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// readAPIError turns a non-2xx answer into an *APIError.
func readAPIError(resp *http.Response) error {
	apiErr := &APIError{StatusCode: resp.StatusCode}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var body struct {
		Error *APIError `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		body.Error.StatusCode = resp.StatusCode
		apiErr = body.Error
	}
	return apiErr
}

// errMediaTooLarge is returned by media for a file over the client's
// limit.
var errMediaTooLarge = errors.New("media too large")

// errMediaHost is returned by media for a media URL on a host the access
// token must not go to.
var errMediaHost = errors.New("host not allowed")

// media downloads the media with the given id: GET /{version}/{media-id}
// answers with a short-lived URL, and a GET of that URL, with the same
// bearer token, answers with the bytes. It returns the bytes and the media
// type the Graph API reports.
func (c *graphClient) media(ctx context.Context, id string) ([]byte, string, error) {
	endpoint := c.base + "/" + c.version + "/" + url.PathEscape(id)
	resp, err := c.get(ctx, endpoint)
	if err != nil {
		return nil, "", fmt.Errorf("media url: %w", err)
	}
	var info struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&info)
	resp.Body.Close()
	if err != nil {
		return nil, "", fmt.Errorf("media url: %w", err)
	}
	u, err := url.Parse(info.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, "", errors.New("media url: the Graph API answered without a usable url")
	}
	if !mediaURLAllowed(u, c.baseURL) {
		// The URL's query is signed and has no place in a log; its
		// origin says where it pointed.
		return nil, "", fmt.Errorf("media url: %w: %s is neither the Graph API's origin nor Meta's media hosts over https", errMediaHost, origin.Of(u))
	}
	resp, err = c.get(ctx, info.URL)
	if err != nil {
		return nil, "", fmt.Errorf("media download: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxMedia+1))
	if err != nil {
		return nil, "", fmt.Errorf("media download: %w", stripURL(err))
	}
	if int64(len(data)) > c.maxMedia {
		return nil, "", fmt.Errorf("media download: %w: larger than %d bytes", errMediaTooLarge, c.maxMedia)
	}
	mediaType := info.MimeType
	if mediaType == "" {
		mediaType = resp.Header.Get("Content-Type")
	}
	return data, mediaType, nil
}

// get sends an authorised GET and returns a 2xx response whose body the
// caller closes.
func (c *graphClient) get(ctx context.Context, endpoint string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, stripURL(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, stripURL(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// stripURL drops the URL from a *url.Error: media URLs carry signed query
// parameters that have no place in logs.
func stripURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", strings.ToLower(uerr.Op), uerr.Err)
	}
	return err
}
