package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/origin"
	"github.com/mombot/mombot/phone"
)

// ErrNoReply is wrapped by [Client.Inbound]'s error for a message that
// gets no reply at all: one older than Config.MaxAge, or one it cannot
// read.
var ErrNoReply = errors.New("whatsapp: message needs no reply")

// Client is the business number's side of the Cloud API: it reads the
// messages the [Server] kept, downloading what they carry, and sends the
// replies. It is safe for concurrent use.
type Client struct {
	cfg    Config
	family map[string]string // normalised numbers
	graph  *graphClient
	// stopping is closed by stopRetries; it cuts the send retries' long
	// waits short.
	stopping chan struct{}
	stopOnce sync.Once
}

var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)

// NewClient checks cfg and returns a Client. It returns an error naming
// every required field missing or malformed.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	var problems []string
	if cfg.AccessToken == "" {
		problems = append(problems, "no access token")
	}
	if cfg.PhoneNumberID == "" {
		problems = append(problems, "no phone number id")
	}
	if !versionRE.MatchString(cfg.APIVersion) {
		problems = append(problems, fmt.Sprintf("API version %q is not like %q", cfg.APIVersion, DefaultAPIVersion))
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		problems = append(problems, fmt.Sprintf("base URL %q is not an http(s) URL", cfg.BaseURL))
	} else if problem := checkBaseURL(base, cfg.InsecureTestEndpoints); problem != "" {
		problems = append(problems, fmt.Sprintf("base URL %q %s", cfg.BaseURL, problem))
	}
	family := make(map[string]string, len(cfg.Family))
	for number, name := range cfg.Family {
		p, err := phone.Normalize(number)
		if err != nil {
			problems = append(problems, fmt.Sprintf("family phone number %q: %v", phone.Mask(number), err))
			continue
		}
		family[p] = name
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("whatsapp: %s", strings.Join(problems, "; "))
	}
	stopping := make(chan struct{})
	return &Client{
		cfg:      cfg,
		family:   family,
		stopping: stopping,
		graph: &graphClient{
			stopping:      stopping,
			http:          origin.Client(cfg.HTTPClient),
			base:          strings.TrimRight(cfg.BaseURL, "/"),
			baseURL:       base,
			version:       cfg.APIVersion,
			phoneNumberID: cfg.PhoneNumberID,
			token:         cfg.AccessToken,
			maxAttempts:   cfg.MaxAttempts,
			retryDelay:    cfg.RetryDelay,
			maxMedia:      cfg.MaxMediaBytes,
			obs:           cfg.Observer,
		},
	}, nil
}

// stopRetries makes a send that fails wait a second at most before its
// next attempt, from now on: a reply whose retry would wait longer is
// left for the next start (see [Server.Shutdown]).
func (c *Client) stopRetries() {
	c.stopOnce.Do(func() { close(c.stopping) })
}

// event reads the WhatsApp message a delivery.Message carries.
func (c *Client) event(m delivery.Message) (event, error) {
	var ev event
	if err := json.Unmarshal(m.Body, &ev); err != nil {
		return event{}, err
	}
	if ev.From != m.Key || ev.ID != m.ID {
		return event{}, errors.New("the message's sender or id is not the inbox's")
	}
	return ev, nil
}

// Inbound reads m, a message the Server kept, and returns it ready for
// the assistant: the sender's name from the family, when it was sent, and
// the photo, voice note or document it carries, downloaded from the Graph
// API.
//
// A message that gets no reply returns an error wrapping ErrNoReply: one
// older than Config.MaxAge when it is read (the one check of age: it may
// have waited in the inbox through downtime; one without a time is as old
// as its receipt), and one that cannot be read. A message the assistant
// cannot be asked about returns an error whose apology.Message is the
// reply to send instead: one wrapping apology.ErrUnsupported for a kind
// the assistant cannot read, apology.ErrImageTooLarge or
// apology.ErrDocumentTooLarge for media over Config.MaxMediaBytes, and an
// *apology.MediaError for media that could not be downloaded. Inbound logs
// each of these and tells the Observer of the messages skipped.
func (c *Client) Inbound(ctx context.Context, m delivery.Message) (Inbound, error) {
	log := c.cfg.Logger.With("id", m.ID, "from", phone.Mask(m.Key))
	ev, err := c.event(m)
	if err != nil {
		log.Error("whatsapp: unreadable message in the inbox dropped", "err", err)
		c.cfg.Observer.MessageSkipped(SkipUnreadable)
		return Inbound{}, fmt.Errorf("%w: unreadable: %w", ErrNoReply, err)
	}
	log = log.With("type", ev.Type)
	if now, sent := c.cfg.Now(), ev.sentAt(); !sent.IsZero() && now.Sub(sent) > c.cfg.MaxAge {
		log.Info("whatsapp: message too old to answer skipped", "sent", sent, "max_age", c.cfg.MaxAge)
		c.cfg.Observer.MessageSkipped(SkipTooOld)
		return Inbound{}, fmt.Errorf("%w: sent %s, more than %s ago", ErrNoReply, sent.Format(time.RFC3339), c.cfg.MaxAge)
	}
	if ev.Kind == kindUnsupported {
		log.Info("whatsapp: unsupported message type")
		return Inbound{}, fmt.Errorf("whatsapp: message type %q: %w", ev.Type, apology.ErrUnsupported)
	}
	in := Inbound{
		ID:          ev.ID,
		From:        ev.From,
		Name:        c.family[ev.From],
		ProfileName: ev.ProfileName,
		Text:        ev.Text,
		Time:        ev.sentAt(),
	}
	if in.Name == "" {
		in.Name = ev.ProfileName
	}
	if in.Time.IsZero() {
		in.Time = ev.Received
	}
	if in.Time.IsZero() {
		in.Time = c.cfg.Now()
	}
	if err := c.fillKinds(ctx, log, ev, &in); err != nil { // kinds.go
		return Inbound{}, err
	}
	return in, nil
}

// Sent is one part of a reply that the Graph API accepted.
type Sent struct {
	// ID is WhatsApp's id of the message ("wamid."), from the send's
	// answer; empty if the answer had none (logged), which is no failure.
	ID string
	// Text is what was sent: one part of a reply.
	Text string
	// Time is when it was sent.
	Time time.Time
}

// Send sends parts, each at most MaxTextLength characters (see [Split]),
// in order, to the sender of m, a message the Server kept (to the digits
// of the number normalised when it came, which the family check used
// too), stopping at the first part that fails. It returns the parts sent, with the ids WhatsApp
// gave them, so that a later message quoting one can be given its text,
// and the error that stopped it, which it logs; [Temporary] tells a
// failure that may pass. Once the last part is sent, the message is
// logged as answered.
func (c *Client) Send(ctx context.Context, m delivery.Message, parts []string) ([]Sent, error) {
	log := c.cfg.Logger.With("id", m.ID, "from", phone.Mask(m.Key))
	ev, err := c.event(m)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: send: %w", err)
	}
	var sent []Sent
	for i, part := range parts {
		id, err := c.graph.sendText(ctx, phone.Digits(ev.From), part)
		if err != nil {
			attrs := []any{"err", err, "part", i + 1, "parts", len(parts)}
			var apiErr *APIError
			if errors.As(err, &apiErr) {
				attrs = append(attrs, "status", apiErr.StatusCode, "code", apiErr.Code, "fbtrace_id", apiErr.FBTraceID)
			}
			log.Error("whatsapp: reply not sent", attrs...)
			c.cfg.Observer.ReplyNotSent(!Temporary(err))
			return sent, err
		}
		if id == "" {
			log.Warn("whatsapp: the Graph API answered a send without a message id; a reply to it will not bring its text")
		}
		sent = append(sent, Sent{ID: id, Text: part, Time: c.cfg.Now()})
	}
	chars := 0
	for _, p := range parts {
		chars += len([]rune(p))
	}
	attrs := []any{"type", ev.Type, "parts", len(parts), "reply_chars", chars}
	if !ev.Received.IsZero() {
		attrs = append(attrs, "took", c.cfg.Now().Sub(ev.Received)) // from its receipt to its reply
	}
	log.Info("whatsapp: message answered", attrs...)
	return sent, nil
}

// Temporary reports whether a send that failed after the Client's retries
// may succeed later: a temporary Graph API error, or no answer at all.
func Temporary(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Temporary()
	}
	var tErr *transportError
	return errors.As(err, &tErr)
}
