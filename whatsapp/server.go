package whatsapp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/internal/origin"
	"github.com/mombot/mombot/phone"
)

// What the sender sees when the assistant cannot help: package apology's
// sentences, so that every apology is chosen in one place. The details go
// to the log only.
var (
	unsupportedReply = apology.Message(apology.ErrUnsupported)
	failedReply      = apology.Internal
)

// Server is the webhook [http.Handler] and the processing behind it. It
// serves:
//
//	GET  /webhook  Meta's verification handshake
//	POST /webhook  message deliveries, signed with the app secret
//	GET  /healthz  200 while serving ("ok", or "degraded: ..." when
//	               Config.Health fails), 503 once shutting down
//	               (HealthHandler serves the same with the build's version,
//	               for a listener that is not public)
//
// A delivery is answered 200 once its messages are accepted by the
// delivery pipeline (kept in the Config.Inbox, or with
// Config.MemoryFallback held in memory when the Inbox fails), and 503 when
// they cannot be kept, so that Meta delivers it again later; the pipeline
// answers them in the background (see package delivery for a message's
// life). With a durable Inbox, a message acknowledged to Meta is answered
// even if the process dies: at least once, and exactly once unless the
// process dies between sending a reply and recording it.
//
// The requests refused before the sender is known (a failed handshake, a
// delivery without a valid signature, a malformed body) are logged once a
// minute for each kind: the first whole, the others as a count when the
// minute ends, or at Shutdown, so that a stranger cannot fill the log.
//
// Create it with [New] and stop it with [Server.Shutdown].
type Server struct {
	cfg     Config
	log     *slog.Logger
	graph   *client
	family  map[string]string
	mux     *http.ServeMux
	closing atomic.Bool
	// stopping is closed when Shutdown begins; it cuts the send retries'
	// long waits short.
	stopping  chan struct{}
	closeOnce sync.Once
	// pipeline takes the messages accepted to their reply.
	pipeline *delivery.Pipeline
	// refused logs the refusals of requests from unknown senders, once
	// a refusalLogEvery for each kind.
	refused *logging.Throttle

	// healthErr is the last failure of Config.Health logged, to log a
	// change only.
	healthMu  sync.Mutex
	healthErr string
}

var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)

// New checks cfg and returns a Server ready to serve. It returns an error
// when a required field is missing, and in particular when there is no
// AppSecret and AllowUnsigned is not set: the server fails closed.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()

	var problems []string
	if cfg.AppSecret == "" && !cfg.AllowUnsigned {
		problems = append(problems, "no app secret to check webhook signatures (set one, or allow unsigned deliveries explicitly for development)")
	}
	if cfg.AccessToken == "" {
		problems = append(problems, "no access token")
	}
	if cfg.PhoneNumberID == "" {
		problems = append(problems, "no phone number id")
	}
	if cfg.Responder == nil {
		problems = append(problems, "no responder")
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
	if len(family) == 0 {
		cfg.Logger.Warn("whatsapp: the family list is empty: no message will be answered")
	}
	if cfg.AppSecret == "" {
		cfg.Logger.Warn("whatsapp: INSECURE: webhook signatures are NOT checked, anyone who finds the URL can send messages as anyone; development only")
	}

	stopping := make(chan struct{})
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		family:   family,
		stopping: stopping,
		refused:  logging.NewThrottle(cfg.Logger, refusalLogEvery),
		graph: &client{
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
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /webhook", s.verify)
	s.mux.HandleFunc("POST /webhook", s.receive)
	s.mux.HandleFunc("GET /healthz", s.healthz)

	// The pipeline answers at once what an earlier process left in the
	// Inbox, and looks again now and then for what a replica that died
	// left.
	s.pipeline = delivery.New(handler{s}, &delivery.Options{
		Inbox: cfg.Inbox, Locker: cfg.Locker, MemoryFallback: cfg.MemoryFallback,
		ResumeEvery: cfg.ResumeEvery, ShutdownLockWait: shutdownLockWait,
		Logger: cfg.Logger, Now: cfg.Now,
	})
	return s, nil
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Shutdown stops accepting deliveries (they are answered 503, so Meta
// delivers them again later) and shuts the delivery pipeline down: the
// messages accepted are answered, for as long as ctx allows; see
// [delivery.Pipeline.Shutdown] for what waits for the next start. Once
// Shutdown has begun, a send that fails is tried again only after a short
// wait (a second at most): a reply whose retry would wait longer stays in
// the Inbox for the next start, so that an unreachable Graph API does not
// hold the shutdown for the retries' backoff. Call it after the
// http.Server's own Shutdown, and before closing what the Responder, the
// Inbox and the Locker use. Calling it again is harmless.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.closeOnce.Do(func() { close(s.stopping) })
	s.refused.Close()
	if err := s.pipeline.Shutdown(ctx); err != nil {
		return fmt.Errorf("whatsapp: %w", err)
	}
	return nil
}

// verify answers Meta's verification handshake: hub.mode=subscribe and
// the right hub.verify_token are answered with hub.challenge.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	challenge := q.Get("hub.challenge")
	token := s.cfg.VerifyToken
	ok := q.Get("hub.mode") == "subscribe" && token != "" && challenge != "" && len(challenge) <= 1024 &&
		subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(token)) == 1
	if !ok {
		s.refuse(r.Context(), "whatsapp: webhook verification refused", "mode", q.Get("hub.mode"), "remote", r.RemoteAddr)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	s.log.Info("whatsapp: webhook verified")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	io.WriteString(w, challenge)
}

// refusalLogEvery is the interval of the log of refused requests: the
// first refusal of each kind in an interval is logged, the others of that
// kind counted and the count logged when the interval ends.
var refusalLogEvery = time.Minute

// refuse logs a request refused before its sender is known: a failed
// handshake, a delivery without a valid signature, a malformed body. Anyone
// who finds the URL can send those, as fast as they like, so they are
// throttled (logging.Throttle) rather than logged a line each.
func (s *Server) refuse(ctx context.Context, msg string, args ...any) {
	s.refused.Log(ctx, slog.LevelWarn, msg, args...)
}

// healthz answers the public GET /healthz: the status line only.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.health(w, r, "")
}

// HealthHandler returns a handler that answers GET /healthz as the Server
// does and, asked with ?verbose=1, adds the line "version: " and version,
// the build. Serve it on a listener that is not public, such as the
// metrics one: the public /healthz does not tell the world which build,
// and so which Go release, runs.
func (s *Server) HealthHandler(version string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		shown := ""
		if r.URL.Query().Get("verbose") != "" {
			shown = version
		}
		s.health(w, r, shown)
	})
}

// health writes the status line, and a version line when version is set.
func (s *Server) health(w http.ResponseWriter, r *http.Request, version string) {
	if s.closing.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	var err error
	if s.cfg.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		err = s.cfg.Health(ctx)
		cancel()
	}
	s.logHealth(err)
	status := "ok"
	if err != nil {
		// The error may name internal hosts and addresses: it goes to the
		// log only.
		status = degradedHealth
	}
	io.WriteString(w, status+"\n")
	if version != "" {
		io.WriteString(w, "version: "+version+"\n")
	}
}

// degradedHealth is what /healthz answers when Config.Health fails.
const degradedHealth = "degraded: a dependency is unavailable, see the server log"

// logHealth logs a change of the health check's result.
func (s *Server) logHealth(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.healthMu.Lock()
	changed := msg != s.healthErr
	s.healthErr = msg
	s.healthMu.Unlock()
	switch {
	case !changed:
	case err != nil:
		s.log.Warn("whatsapp: health check failed; answering degraded", "err", err)
	default:
		s.log.Info("whatsapp: health check passes again")
	}
}

// receive authenticates a delivery, queues its messages and answers at
// once; the messages are handled in the background.
func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	w = rec
	defer func() { s.cfg.Observer.Webhook(refusal(rec.status)) }()
	if s.closing.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if r.ContentLength > MaxBodyBytes {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	if s.cfg.AppSecret != "" {
		sig := r.Header.Get(SignatureHeader)
		if sig == "" {
			s.refuse(r.Context(), "whatsapp: webhook delivery without a signature refused", "remote", r.RemoteAddr)
			http.Error(w, "missing signature", http.StatusUnauthorized)
			return
		}
		if !ValidSignature([]byte(s.cfg.AppSecret), body, sig) {
			s.refuse(r.Context(), "whatsapp: webhook delivery with a bad signature refused", "remote", r.RemoteAddr)
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
	}
	d, err := parseDelivery(body)
	if err != nil {
		s.refuse(r.Context(), "whatsapp: malformed webhook delivery", "err", err)
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	if d.Object != "whatsapp_business_account" {
		s.log.Info("whatsapp: webhook delivery for another object ignored", "object", d.Object)
		w.WriteHeader(http.StatusOK)
		return
	}
	if d.Statuses > 0 || d.Skipped > 0 {
		s.log.Debug("whatsapp: status updates and other changes ignored", "statuses", d.Statuses, "changes", d.Skipped)
	}
	if d.Malformed > 0 {
		s.log.Warn("whatsapp: malformed messages or statuses in a delivery skipped; the rest is handled", "malformed", d.Malformed)
	}
	for _, f := range d.Failed {
		// SendFailure masks the recipient when logged.
		s.log.Warn("whatsapp: WhatsApp reports a reply as not delivered", "failure", f)
	}
	for _, ev := range d.Events {
		if !s.accept(ev) {
			continue
		}
		log := s.log.With("id", ev.ID, "type", ev.Type, "from", phone.Mask(ev.From))
		ev.Received = s.cfg.Now()
		body, err := json.Marshal(ev)
		if err != nil { // cannot happen: an event is strings and numbers
			log.Error("whatsapp: message cannot be kept", "err", err)
			continue
		}
		err = s.pipeline.Accept(r.Context(), delivery.Message{ID: ev.ID, Key: ev.From, Body: body})
		switch {
		case errors.Is(err, delivery.ErrDuplicate):
			log.Info("whatsapp: duplicate delivery skipped")
			s.cfg.Observer.MessageSkipped(SkipDuplicate)
		case err != nil:
			// Ask Meta to deliver again later. Messages kept already are
			// answered, and their ids make the redelivery of those a
			// no-op.
			http.Error(w, "cannot keep the message", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// accept decides whether a message is kept at all; its age is checked
// when it is answered, since it may also wait in the inbox.
func (s *Server) accept(ev event) bool {
	log := s.log.With("id", ev.ID, "type", ev.Type, "from", phone.Mask(ev.From))
	switch {
	case ev.From == "":
		log.Warn("whatsapp: message without a usable sender ignored", "from", phone.Mask(ev.WaID))
		s.cfg.Observer.MessageSkipped(SkipNoSender)
		return false
	case ev.ID == "":
		log.Warn("whatsapp: message without an id ignored")
		s.cfg.Observer.MessageSkipped(SkipNoID)
		return false
	case ev.PhoneNumberID != s.cfg.PhoneNumberID:
		// A delivery without the number it was sent to is no more ours
		// than one to another number.
		log.Warn("whatsapp: message to another business number, or to none, ignored", "phone_number_id", ev.PhoneNumberID)
		s.cfg.Observer.MessageSkipped(SkipOtherNumber)
		return false
	}
	if _, ok := s.family[ev.From]; !ok {
		log.Info("whatsapp: message from a number outside the family ignored")
		s.cfg.Observer.MessageSkipped(SkipNotFamily)
		return false
	}
	if ev.Kind == kindIgnored {
		log.Debug("whatsapp: message of a kind that needs no answer ignored")
		s.cfg.Observer.MessageSkipped(SkipIgnoredKind)
		return false
	}
	return true
}

// respond builds the Inbound for ev and asks the Responder, returning the
// reply to send.
func (s *Server) respond(ctx, held context.Context, log *slog.Logger, ev event) string {
	in := Inbound{
		ID:          ev.ID,
		From:        ev.From,
		Name:        s.family[ev.From],
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
		in.Time = s.cfg.Now()
	}
	if reply, ok := s.fillKinds(ctx, log, ev, &in); !ok { // kinds.go
		return reply
	}
	reply, err := s.cfg.Responder.Respond(ctx, held, in)
	if err != nil {
		log.Error("whatsapp: responder failed", "err", err)
		return apology.Message(err)
	}
	// "message answered" is logged once the reply is sent (handler.Send).
	return reply
}
