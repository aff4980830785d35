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
	"sync"
	"sync/atomic"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/phone"
)

// Queue takes the messages the [Server] accepts to their reply: a
// *delivery.Pipeline. Accept is given the messages of one webhook delivery
// together and returns an error for each: nil once it is kept, one
// wrapping delivery.ErrDuplicate for a message waiting or handled already,
// and any other when it cannot be kept, in which case the delivery is
// refused with 503 for Meta to deliver it again. Shutdown stops it taking
// messages and answers those it holds, for as long as ctx allows.
type Queue interface {
	Accept(ctx context.Context, batch ...delivery.Message) []error
	Shutdown(ctx context.Context) error
}

var _ Queue = (*delivery.Pipeline)(nil)

// ServerOptions configure what a [Server] serves besides the webhook. The
// zero value means none.
type ServerOptions struct {
	// Health, if set, reports on what the service depends on (the
	// conversation store, say) for GET /healthz. An error there does not
	// stop the server, which goes on answering without what failed, so
	// /healthz still answers 200 but says "degraded". The error itself is
	// logged, when it changes, and never shown on /healthz: it may name
	// internal hosts.
	Health func(ctx context.Context) error
}

// Server is the webhook [http.Handler]. It serves:
//
//	GET  /webhook  Meta's verification handshake
//	POST /webhook  message deliveries, signed with the app secret
//	GET  /healthz  200 while serving ("ok", or "degraded: ..." when
//	               ServerOptions.Health fails), 503 once shutting down
//	               (HealthHandler serves the same with the build's version,
//	               for a listener that is not public)
//
// It checks every delivery's signature, and hands each message from the
// family to its Client's business number to its [Queue]; messages from
// others, to other numbers and of kinds that need no answer are logged and
// left. A delivery is answered 200 once its messages are kept by the
// Queue, and 503 when they cannot be, so that Meta delivers it again later.
// The Queue answers them in the background (see package delivery for a
// message's life, and [Client] for reading and answering them).
//
// The requests refused before the sender is known (a failed handshake, a
// delivery without a valid signature, a malformed body) are logged once a
// minute for each kind: the first whole, the others as a count when the
// minute ends, or at Shutdown, so that a stranger cannot fill the log.
//
// Create it with [NewServer] and stop it with [Server.Shutdown].
type Server struct {
	cfg     Config
	client  *Client
	queue   Queue
	opts    ServerOptions
	log     *slog.Logger
	mux     *http.ServeMux
	closing atomic.Bool
	// refused logs the refusals of requests from unknown senders, once
	// a refusalLogEvery for each kind.
	refused *logging.Throttle

	// healthErr is the last failure of ServerOptions.Health logged, to log
	// a change only.
	healthMu  sync.Mutex
	healthErr string
}

// NewServer returns the webhook Server of c's business number, which hands
// the messages it accepts to q. It returns an error when c's Config has no
// AppSecret and does not set AllowUnsigned: the server fails closed.
func NewServer(c *Client, q Queue, opts *ServerOptions) (*Server, error) {
	if c == nil || q == nil {
		return nil, errors.New("whatsapp: new server: no client or no queue")
	}
	cfg := c.cfg
	if cfg.AppSecret == "" && !cfg.AllowUnsigned {
		return nil, errors.New("whatsapp: no app secret to check webhook signatures (set one, or allow unsigned deliveries explicitly for development)")
	}
	if len(c.family) == 0 {
		cfg.Logger.Warn("whatsapp: the family list is empty: no message will be answered")
	}
	if cfg.AppSecret == "" {
		cfg.Logger.Warn("whatsapp: INSECURE: webhook signatures are NOT checked, anyone who finds the URL can send messages as anyone; development only")
	}
	s := &Server{cfg: cfg, client: c, queue: q, log: cfg.Logger, refused: logging.NewThrottle(cfg.Logger, refusalLogEvery)}
	if opts != nil {
		s.opts = *opts
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /webhook", s.verify)
	s.mux.HandleFunc("POST /webhook", s.receive)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	return s, nil
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Shutdown stops accepting deliveries (they are answered 503, so Meta
// delivers them again later) and shuts the Queue down: the messages
// accepted are answered, for as long as ctx allows; see
// [delivery.Pipeline.Shutdown] for what waits for the next start. Once
// Shutdown has begun, a send of the Client that fails is tried again only
// after a short wait (a second at most): a reply whose retry would wait
// longer stays in the inbox for the next start, so that an unreachable
// Graph API does not hold the shutdown for the retries' backoff. Call it
// after the http.Server's own Shutdown, and before closing what the
// Queue's handler, inbox and locker use. Calling it again is harmless.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.client.stopRetries()
	s.refused.Close()
	if err := s.queue.Shutdown(ctx); err != nil {
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
	if s.opts.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		err = s.opts.Health(ctx)
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

// degradedHealth is what /healthz answers when ServerOptions.Health fails.
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
	var batch []delivery.Message
	var kept []event
	for _, ev := range d.Events {
		if !s.accept(ev) {
			continue
		}
		ev.Received = s.cfg.Now()
		body, err := json.Marshal(ev)
		if err != nil { // cannot happen: an event is strings and numbers
			s.log.Error("whatsapp: message cannot be kept", "id", ev.ID, "type", ev.Type, "from", phone.Mask(ev.From), "err", err)
			continue
		}
		batch = append(batch, delivery.Message{ID: ev.ID, Key: ev.From, Body: body})
		kept = append(kept, ev)
	}
	refused := false
	if len(batch) > 0 {
		for i, err := range s.queue.Accept(r.Context(), batch...) {
			switch {
			case errors.Is(err, delivery.ErrDuplicate):
				ev := kept[i]
				s.log.Info("whatsapp: duplicate delivery skipped", "id", ev.ID, "type", ev.Type, "from", phone.Mask(ev.From))
				s.cfg.Observer.MessageSkipped(SkipDuplicate)
			case err != nil:
				refused = true
				s.cfg.Observer.MessageRefused()
			}
		}
	}
	if refused {
		// Ask Meta to deliver again later. Messages kept already are
		// answered, and their ids make the redelivery of those a no-op.
		http.Error(w, "cannot keep the message", http.StatusServiceUnavailable)
		return
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
	if _, ok := s.client.family[ev.From]; !ok {
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
