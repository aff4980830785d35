package transcription

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/internal/origin"
)

// Defaults of [Options].
const (
	// DefaultMaxDuration is the longest voice note transcribed: the
	// original design's 3 minutes.
	DefaultMaxDuration = 3 * time.Minute
	// DefaultTimeout bounds one transcription, upload and answer. Whisper
	// on OpenAI or Groq takes seconds for a 3-minute note.
	DefaultTimeout = time.Minute
	// MaxUploadBytes is OpenAI's documented limit on an upload, 25 MB;
	// Groq's free tier has the same. A voice note within the duration cap
	// is far smaller: see UploadLimit.
	MaxUploadBytes = 25 << 20
	// MaxBitrate is the highest average bit rate of a note sent, in bits
	// a second: twice what WhatsApp records voice notes at (16-32 kbit/s).
	MaxBitrate = 64000
	// transcriptionsPath is the path of the endpoint below a base URL.
	transcriptionsPath = "/audio/transcriptions"
)

// Options configure a [Client]. The zero value of every field but URL and
// Model means its default.
type Options struct {
	// URL is the endpoint, such as
	// "https://api.openai.com/v1/audio/transcriptions", or the API's base
	// URL ("https://api.groq.com/openai/v1"), to which
	// "/audio/transcriptions" is added. Required.
	URL string
	// Model is the model's name, such as "whisper-1",
	// "gpt-4o-mini-transcribe" or "whisper-large-v3-turbo". Required: the
	// API refuses a request without one.
	Model string
	// APIKey is sent as a bearer token; empty sends none (a local server).
	APIKey string
	// MaxDuration is the longest voice note sent; default
	// DefaultMaxDuration.
	MaxDuration time.Duration
	// Timeout bounds one call; default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient makes the calls; default a new client (its Timeout is
	// not used: Timeout bounds every call through the context). The
	// client calls with a copy whose redirects to another origin carry
	// no key.
	HTTPClient *http.Client
	// InsecureTestEndpoint lets URL be http on any host: a test's
	// stand-in. Without it URL must be https, or http to this machine
	// (localhost, 127.0.0.0/8, ::1), where nothing crosses a network.
	// The command sets it from MOMBOT_INSECURE_TEST_ENDPOINTS=1 only.
	InsecureTestEndpoint bool
}

// Client transcribes voice notes. It is safe for concurrent use.
type Client struct {
	endpoint    string
	model       string
	key         string
	maxDuration time.Duration
	timeout     time.Duration
	http        *http.Client
}

// New returns a client for the endpoint of opts. It fails without a URL
// (or with one that is not https, or http to this machine, unless
// InsecureTestEndpoint) or a model, and with a negative duration or
// timeout.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(opts.URL))
	switch {
	case strings.TrimSpace(opts.URL) == "":
		return nil, errors.New("transcription: no url")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("transcription: url %q is not an http or https URL", opts.URL)
	case u.Scheme == "http" && !opts.InsecureTestEndpoint && !origin.Loopback(u.Hostname()):
		return nil, fmt.Errorf("transcription: url %q is http: the key and the voice notes go over https only, or http to this machine (tests set MOMBOT_INSECURE_TEST_ENDPOINTS=1 for another)", opts.URL)
	case u.User != nil:
		return nil, errors.New("transcription: the url must not hold credentials; the key goes in MOMBOT_TRANSCRIPTION_API_KEY")
	case strings.TrimSpace(opts.Model) == "":
		return nil, errors.New("transcription: no model")
	case opts.MaxDuration < 0:
		return nil, fmt.Errorf("transcription: max duration must not be negative, got %s", opts.MaxDuration)
	case opts.Timeout < 0:
		return nil, fmt.Errorf("transcription: timeout must not be negative, got %s", opts.Timeout)
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), transcriptionsPath) {
		u.Path = strings.TrimRight(u.Path, "/") + transcriptionsPath
	}
	c := &Client{
		endpoint: u.String(), model: strings.TrimSpace(opts.Model), key: opts.APIKey,
		maxDuration: opts.MaxDuration, timeout: opts.Timeout, http: opts.HTTPClient,
	}
	if c.maxDuration == 0 {
		c.maxDuration = DefaultMaxDuration
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	c.http = origin.Client(c.http)
	return c, nil
}

// MaxDuration returns the longest voice note the client sends.
func (c *Client) MaxDuration() time.Duration { return c.maxDuration }

// UploadLimit returns the largest request, in bytes, that a client whose
// MaxDuration is d sends: d of audio at MaxBitrate, and 10% more, at most
// MaxUploadBytes. For 3 minutes it is 1,584,000 bytes.
func UploadLimit(d time.Duration) int {
	limit := d.Milliseconds() * (MaxBitrate / 8 / 1000) * 11 / 10
	return int(min(max(limit, 0), MaxUploadBytes))
}

// Transcribe returns the words of the voice note audio, an OGG/Opus file
// as WhatsApp records it. It first reads the note's length from the file
// ([Duration]): a file that is not OGG/Opus or Vorbis is refused with an
// error wrapping apology.ErrAudioFormat, and one longer than MaxDuration
// with an *apology.VoiceTooLongError, before anything is sent; so is a
// request that would be larger than [UploadLimit] allows (audio at more
// than MaxBitrate, or data besides the audio), with an error wrapping
// apology.ErrAudioFormat. A failed,
// refused or timed-out call is an error wrapping apology.ErrTranscription
// (and an *APIError for an error answer); a transcript without words, one
// wrapping apology.ErrVoiceEmpty. The call gives up after the client's
// timeout or when ctx ends.
func (c *Client) Transcribe(ctx context.Context, audio []byte) (string, error) {
	d, err := Duration(audio)
	if err != nil {
		return "", fmt.Errorf("transcription: %w", err)
	}
	if d > c.maxDuration {
		return "", fmt.Errorf("transcription: %w", &apology.VoiceTooLongError{Duration: d, Limit: c.maxDuration})
	}
	limit := UploadLimit(c.maxDuration)
	if len(audio) > limit {
		return "", fmt.Errorf("transcription: %w: %d bytes for %s of audio, over the %d bytes a note of at most %s is sent in", apology.ErrAudioFormat, len(audio), d.Round(100*time.Millisecond), limit, c.maxDuration)
	}
	body, contentType := c.form(audio)
	if len(body) > limit {
		return "", fmt.Errorf("transcription: %w: a request of %d bytes, over the %d bytes a note of at most %s is sent in", apology.ErrAudioFormat, len(body), limit, c.maxDuration)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("transcription: %w: %v", apology.ErrTranscription, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %s", c.timeout)
		}
		return "", fmt.Errorf("transcription: %w: %w", apology.ErrTranscription, stripURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("transcription: %w: reading the answer: %w", apology.ErrTranscription, stripURL(err))
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("transcription: %w: %w", apology.ErrTranscription, readAPIError(resp.StatusCode, data))
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", fmt.Errorf("transcription: %w: the answer has no \"text\" (HTTP %d, %d bytes)", apology.ErrTranscription, resp.StatusCode, len(data))
	}
	text := strings.TrimSpace(strings.ToValidUTF8(*out.Text, "\uFFFD"))
	if text == "" {
		return "", fmt.Errorf("transcription: %w (%s of audio)", apology.ErrVoiceEmpty, d.Round(100*time.Millisecond))
	}
	return text, nil
}

// form returns the multipart body of a request and its content type:
// the file, the model, and response_format json.
func (c *Client) form(audio []byte) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="file"; filename="voice-note.ogg"`)
	h.Set("Content-Type", "audio/ogg")
	// Writes to a bytes.Buffer do not fail.
	part, _ := w.CreatePart(h)
	_, _ = part.Write(audio)
	_ = w.WriteField("model", c.model)
	_ = w.WriteField("response_format", "json")
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// APIError is an error answer of the endpoint, in the OpenAI shape that
// the compatible servers share:
//
//	{"error": {"message": "...", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}
type APIError struct {
	StatusCode int
	Message    string
	Type       string
	Code       string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// readAPIError reads an error answer. The message of a 401 or 403 is left
// out: OpenAI's names part of the key that was refused.
func readAPIError(status int, data []byte) *APIError {
	e := &APIError{StatusCode: status}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil {
		e.Type = body.Error.Type
		if body.Error.Code != nil {
			e.Code = fmt.Sprint(body.Error.Code)
		}
		if status != http.StatusUnauthorized && status != http.StatusForbidden {
			e.Message = truncate(body.Error.Message, 300)
		}
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// stripURL drops the URL from a *url.Error, which the log does not need.
func stripURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", strings.ToLower(uerr.Op), uerr.Err)
	}
	return err
}
