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
// and 5xx, and the Graph error codes documented as temporary (1 unknown,
// 2 service, 4 and 17 too many calls, 341 application limit, 80007 and
// 130429 rate limits).
func (e *APIError) Temporary() bool {
	if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
		return true
	}
	switch e.Code {
	case 1, 2, 4, 17, 341, 80007, 130429:
		return true
	}
	return false
}

// client makes the few Graph API calls the server needs. The access token
// goes only into the Authorization header, never into a URL, an error or a
// log line.
type client struct {
	http          *http.Client
	base          string // scheme://host, no trailing slash
	version       string
	phoneNumberID string
	token         string
	maxAttempts   int
	retryDelay    time.Duration
	maxMedia      int64
}

// sendText sends body as one text message to the WhatsApp id to, retrying
// temporary failures with exponential backoff and jitter (or the server's
// Retry-After) up to maxAttempts times, as long as ctx allows.
func (c *client) sendText(ctx context.Context, to, body string) error {
	payload, err := json.Marshal(map[string]any{
		"messaging_product": "whatsapp",
		"recipient_type":    "individual",
		"to":                to,
		"type":              "text",
		"text":              map[string]any{"preview_url": false, "body": body},
	})
	if err != nil {
		return err
	}
	endpoint := c.base + "/" + c.version + "/" + url.PathEscape(c.phoneNumberID) + "/messages"
	for attempt := 1; ; attempt++ {
		wait, err := c.post(ctx, endpoint, payload)
		if err == nil {
			return nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Temporary() || attempt >= c.maxAttempts {
			if attempt > 1 {
				return fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return err
		}
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up waiting to retry: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// post sends one request; on a temporary failure it also returns how long
// the server asked us to wait, if it did.
func (c *client) post(ctx context.Context, endpoint string, payload []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, stripURL(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return 0, nil
	}
	return retryAfter(resp.Header.Get("Retry-After")), readAPIError(resp)
}

func (c *client) backoff(attempt int) time.Duration {
	d := c.retryDelay << (attempt - 1)
	if d <= 0 || d > 30*time.Second {
		d = 30 * time.Second
	}
	// Full jitter on the upper half, so that replicas retrying together
	// spread out.
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header given in seconds, capped at a
// minute; other forms are ignored.
func retryAfter(h string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, time.Minute)
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

// media downloads the media with the given id: GET /{version}/{media-id}
// answers with a short-lived URL, and a GET of that URL, with the same
// bearer token, answers with the bytes. It returns the bytes and the media
// type the Graph API reports.
func (c *client) media(ctx context.Context, id string) ([]byte, string, error) {
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
		return nil, "", fmt.Errorf("media download: larger than %d bytes", c.maxMedia)
	}
	mediaType := info.MimeType
	if mediaType == "" {
		mediaType = resp.Header.Get("Content-Type")
	}
	return data, mediaType, nil
}

// get sends an authorised GET and returns a 2xx response whose body the
// caller closes.
func (c *client) get(ctx context.Context, endpoint string) (*http.Response, error) {
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
