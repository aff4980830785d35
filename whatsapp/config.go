package whatsapp

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults used for the zero values of [Config].
const (
	DefaultAPIVersion    = "v21.0"
	DefaultBaseURL       = "https://graph.facebook.com"
	DefaultMaxAge        = 24 * time.Hour
	DefaultMaxAttempts   = 6
	DefaultRetryDelay    = 2 * time.Second
	DefaultMaxMediaBytes = 20 << 20 // the largest PDF the assistant reads
)

// MaxBodyBytes is the largest webhook body the server reads; a larger one
// is refused with 413.
const MaxBodyBytes = 3 << 20

// Inbound is one message from a family member, ready for the assistant.
type Inbound struct {
	// ID is WhatsApp's message id (a "wamid.").
	ID string
	// From is the sender's phone number, "+" and digits.
	From string
	// Name is the sender's name from the family configuration, or the
	// WhatsApp profile name when the configuration has none.
	Name string
	// ProfileName is the name on the sender's WhatsApp profile; it may be
	// empty and is chosen by the sender.
	ProfileName string
	// Text is the message: the text, a photo's, document's or video's
	// caption, or the title of the button or list item tapped. It may be
	// empty for those and for the other kinds below.
	Text string
	// Image is the photo's bytes, nil for other messages; ImageType is its
	// media type as WhatsApp reports it, such as "image/jpeg".
	Image     []byte
	ImageType string
	// Time is when the sender sent it, or when the server received it if
	// the sender's clock dates it more than FutureSlack later.
	Time time.Time

	// ReplyTo is the id of the earlier message this one replies to
	// (WhatsApp's swipe to reply), if any: one the sender sent, or one
	// the server sent (see [Client.Send]).
	ReplyTo string
	// Forwarded is set when the sender forwarded the message rather than
	// wrote it, ForwardedMany when WhatsApp marks it forwarded many times
	// (more than 5).
	Forwarded     bool
	ForwardedMany bool
	// Audio is a voice note's or an audio file's bytes, AudioType its
	// media type ("audio/ogg; codecs=opus"); Voice is set when it was
	// recorded in WhatsApp.
	Audio     []byte
	AudioType string
	Voice     bool
	// Document is a file's bytes, DocumentType its media type as the
	// sender's phone declared it, Filename its name; Text is its caption.
	Document     []byte
	DocumentType string
	Filename     string
	// Video is set for a video, which is not downloaded: Text is its
	// caption, if any.
	Video bool
	// Location is a location the sender shared, Contacts the contact
	// cards.
	Location *Location
	Contacts []Contact
}

// Config is the WhatsApp side of the service: the business number, its
// Cloud API credentials and how they are used, and the family allowed to
// talk to it. [NewClient] takes it. Fields marked required must be set;
// the zero value of every other field means its default.
type Config struct {
	// AccessToken is the Graph API token sent as a bearer token. Required.
	AccessToken string
	// PhoneNumberID is the id of the business phone number replies are
	// sent from; messages to other numbers of the account are ignored.
	// Required.
	PhoneNumberID string
	// AppSecret is the Meta app's secret, which signs every webhook
	// delivery. Required unless AllowUnsigned is set.
	AppSecret string
	// AllowUnsigned lets NewServer succeed without an AppSecret, in which
	// case deliveries are not authenticated at all. For local development
	// only; NewServer logs a warning when it takes effect.
	AllowUnsigned bool
	// VerifyToken is the token chosen when registering the webhook URL
	// with Meta, checked during the verification handshake. Without it the
	// handshake always fails.
	VerifyToken string

	// APIVersion is the Graph API version in request paths, such as
	// "v21.0". Default DefaultAPIVersion.
	APIVersion string
	// BaseURL is the Graph API's scheme and host. Default DefaultBaseURL,
	// the only one allowed unless InsecureTestEndpoints is set.
	BaseURL string
	// InsecureTestEndpoints lets BaseURL be http, and on any host: a
	// test's fake Graph API. The command sets it from
	// MOMBOT_INSECURE_TEST_ENDPOINTS=1 only. Even then the access token
	// goes to a media URL only on BaseURL's own origin (scheme, host and
	// port) or on Meta's media hosts over https, and never follows a
	// redirect to another origin.
	InsecureTestEndpoints bool
	// HTTPClient makes the Graph API calls. Default: a client with a
	// 30-second timeout. The Client makes its calls with a copy whose
	// redirects to another origin carry no Authorization header.
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts to send one message part when the
	// send fails for a passing reason: 429, 5xx, a temporary Graph error
	// code, a dropped connection or a timeout. Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryDelay is the backoff before the second attempt; it doubles for
	// each attempt after that. Default DefaultRetryDelay.
	RetryDelay time.Duration
	// MaxMediaBytes bounds the size of a downloaded photo, voice note or
	// document; a larger one is answered with what the limit is. Default
	// DefaultMaxMediaBytes.
	MaxMediaBytes int64

	// Family maps the phone numbers allowed to talk to the assistant to
	// the person's name (which may be empty). Numbers are normalised with
	// phone.Normalize, so "+1 631-555-1181" matches the wa_id 16315551181.
	// Messages from other numbers are logged, masked, and ignored.
	Family map[string]string
	// MaxAge is how old a message may be and still be answered; older
	// ones, such as a backlog redelivered after downtime, are logged and
	// skipped. Default DefaultMaxAge.
	MaxAge time.Duration

	// Observer hears what the Client and the Server do, for metrics.
	// Default none.
	Observer Observer
	// Logger receives the Client's and the Server's logs. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with each zero field that has a default set to
// it: the values a [Client] made with c works with, for logging them.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.APIVersion == "" {
		c.APIVersion = DefaultAPIVersion
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.MaxMediaBytes <= 0 {
		c.MaxMediaBytes = DefaultMaxMediaBytes
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

// LogValue implements slog.LogValuer so that a Config can be logged: the
// secrets are reported only as set or not.
func (c Config) LogValue() slog.Value {
	set := func(s string) string {
		if s == "" {
			return "unset"
		}
		return "set"
	}
	return slog.GroupValue(
		slog.String("access_token", set(c.AccessToken)),
		slog.String("app_secret", set(c.AppSecret)),
		slog.String("verify_token", set(c.VerifyToken)),
		slog.String("phone_number_id", c.PhoneNumberID),
		slog.String("api_version", c.APIVersion),
		slog.String("base_url", c.BaseURL),
		slog.Int("family", len(c.Family)),
		slog.Duration("max_age", c.MaxAge),
		slog.Bool("allow_unsigned", c.AllowUnsigned),
		slog.Bool("insecure_test_endpoints", c.InsecureTestEndpoints),
	)
}
