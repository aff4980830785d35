package graphtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The credentials the fake accepts.
const (
	Token         = "EAAgraphtest-fake-access-token"
	PhoneNumberID = "106540352242922"
	Version       = "v21.0"
)

// MaxTextLength is the Cloud API's limit on a text message's body, in
// characters as clients count them: UTF-16 code units, in which a
// character outside the Basic Multilingual Plane (most emoji) counts two.
const MaxTextLength = 4096

// Message is one text message the fake accepted.
type Message struct {
	ID   string // the wamid the fake answered with
	To   string // the "to" field as sent
	Body string // text.body
	// PreviewURL is text.preview_url.
	PreviewURL bool
	// Raw is the request body exactly as received.
	Raw []byte
	// Time is when the fake accepted it.
	Time time.Time
}

// Server is a fake Graph API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of the server, for whatsapp.Config.BaseURL.
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	sent     []Message
	attempts int
	fail     []Failure
	media    map[string]media
	changed  chan struct{} // closed and replaced whenever sent grows
	nextID   int
}

type media struct {
	data     []byte
	mimeType string
}

// NewServer starts a fake Graph API and stops it when t's test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{media: map[string]media{}, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// AddMedia makes the media id serve data with the given media type.
func (s *Server) AddMedia(id string, data []byte, mimeType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media[id] = media{data: append([]byte(nil), data...), mimeType: mimeType}
}

// FailNext makes the next n message sends fail with the HTTP status and
// the Graph error the real API gives with it: 429 is error 130429 "Rate
// limit hit", 500 error 1, 503 error 2, anything else error 100.
func (s *Server) FailNext(n, status int) {
	s.FailNextWith(n, Failure{Status: status})
}

// Failure is how a send fails; see [Server.FailNextWith].
type Failure struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is the Graph error code. Zero means the one the real API gives
	// with Status (see [Server.FailNext]); the codes below are answered
	// with the real API's message for them, others with a generic one.
	//
	//	131000 Something went wrong (HTTP 500)
	//	131026 Message undeliverable (400)
	//	131047 Re-engagement message (400)
	//	131048 Spam rate limit hit (400)
	//	131056 (Business Account, Consumer Account) pair rate limit hit (400)
	//	133004 Server temporarily unavailable (503)
	Code int
	// RetryAfter, when positive, is sent as a Retry-After header, in whole
	// seconds (rounded up).
	RetryAfter time.Duration
	// Drop closes the connection without an answer, as a network failure
	// or a timed-out proxy would; Status and the rest are then unused.
	Drop bool
}

// FailNextWith makes the next n message sends fail as f says.
func (s *Server) FailNextWith(n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fail = append(s.fail, f)
	}
}

// Sent returns the messages accepted so far, in order.
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.sent...)
}

// Attempts returns the number of send requests received, failed ones
// included.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// WaitSent waits until at least n messages have been accepted, or ctx is
// done, and returns the messages accepted so far.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Message, error) {
	for {
		s.mu.Lock()
		sent, changed := append([]Message(nil), s.sent...), s.changed
		s.mu.Unlock()
		if len(sent) >= n {
			return sent, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return sent, fmt.Errorf("graphtest: %d of %d messages sent: %w", len(sent), n, ctx.Err())
		}
	}
}

var (
	versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)
	sendPath  = regexp.MustCompile(`^/([^/]+)/([^/]+)/messages$`)
	mediaPath = regexp.MustCompile(`^/([^/]+)/([^/]+)$`)
	download  = regexp.MustCompile(`^/whatsapp_business/attachments/([^/]+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && sendPath.MatchString(r.URL.Path):
		m := sendPath.FindStringSubmatch(r.URL.Path)
		s.send(w, r, m[1], m[2])
	case r.Method == http.MethodGet && download.MatchString(r.URL.Path):
		s.download(w, r, download.FindStringSubmatch(r.URL.Path)[1])
	case r.Method == http.MethodGet && mediaPath.MatchString(r.URL.Path):
		m := mediaPath.FindStringSubmatch(r.URL.Path)
		s.mediaURL(w, r, m[1], m[2])
	default:
		writeError(w, http.StatusBadRequest, graphError{
			Message: "Unknown path components: " + r.URL.Path, Type: "OAuthException", Code: 2500})
	}
}

// graphError is the Graph API's error object.
type graphError struct {
	Message   string          `json:"message"`
	Type      string          `json:"type"`
	Code      int             `json:"code"`
	Subcode   int             `json:"error_subcode,omitempty"`
	ErrorData json.RawMessage `json:"error_data,omitempty"`
	FBTraceID string          `json:"fbtrace_id"`
}

func writeError(w http.ResponseWriter, status int, e graphError) {
	if e.FBTraceID == "" {
		e.FBTraceID = "AgraphtestTrace" + strconv.Itoa(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]graphError{"error": e})
}

func param(msg string) graphError {
	return graphError{Message: "(#100) " + msg, Type: "OAuthException", Code: 100}
}

func noObject(method, id string) graphError {
	return graphError{
		Message: fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", method, id),
		Type:    "GraphMethodException", Code: 100, Subcode: 33,
	}
}

// authorized checks the bearer token and the version, answering the error
// the real API gives when one is wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, version string) bool {
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		writeError(w, http.StatusBadRequest, graphError{
			Message: "An active access token must be used to query information about the current user.",
			Type:    "OAuthException", Code: 2500})
		return false
	case auth != "Bearer "+Token:
		writeError(w, http.StatusUnauthorized, graphError{
			Message: "Invalid OAuth access token - Cannot parse access token", Type: "OAuthException", Code: 190})
		return false
	case version != "" && !versionRE.MatchString(version):
		writeError(w, http.StatusBadRequest, graphError{
			Message: "Unknown path components: /" + version, Type: "OAuthException", Code: 2500})
		return false
	}
	return true
}

type sendRequest struct {
	MessagingProduct string `json:"messaging_product"`
	RecipientType    string `json:"recipient_type"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Text             *struct {
		PreviewURL bool    `json:"preview_url"`
		Body       *string `json:"body"`
	} `json:"text"`
}

func (s *Server) send(w http.ResponseWriter, r *http.Request, version, phoneID string) {
	s.mu.Lock()
	s.attempts++
	var fail *Failure
	if len(s.fail) > 0 {
		f := s.fail[0]
		fail, s.fail = &f, s.fail[1:]
	}
	s.mu.Unlock()
	if fail != nil && fail.Drop {
		drop(w)
		return
	}
	if !s.authorized(w, r, version) {
		return
	}
	if fail != nil {
		if fail.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((fail.RetryAfter+time.Second-1)/time.Second)))
		}
		writeError(w, fail.Status, injected(fail.Status, fail.Code))
		return
	}
	if phoneID != PhoneNumberID {
		writeError(w, http.StatusBadRequest, noObject("post", phoneID))
		return
	}
	var req sendRequest
	raw, err := readAll(r)
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	var bad string
	switch {
	case err != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		bad = "The parameter messaging_product is required."
	case req.MessagingProduct == "":
		bad = "The parameter messaging_product is required."
	case req.MessagingProduct != "whatsapp":
		bad = fmt.Sprintf("Param messaging_product must be one of {WHATSAPP} - got %q.", req.MessagingProduct)
	case req.RecipientType != "" && req.RecipientType != "individual" && req.RecipientType != "group":
		bad = fmt.Sprintf("Param recipient_type must be one of {INDIVIDUAL, GROUP} - got %q.", req.RecipientType)
	case req.To == "":
		bad = "The parameter to is required."
	case req.Type != "" && req.Type != "text":
		bad = fmt.Sprintf("graphtest sends text messages only - got type %q.", req.Type)
	case req.Text == nil || req.Text.Body == nil || *req.Text.Body == "":
		bad = "The parameter text['body'] is required."
	case !utf8.ValidString(*req.Text.Body):
		bad = "Param text['body'] must be a valid UTF-8 string."
	case len(utf16.Encode([]rune(*req.Text.Body))) > MaxTextLength:
		bad = fmt.Sprintf("Param text['body'] must be at most %d characters long.", MaxTextLength)
	}
	if bad != "" {
		writeError(w, http.StatusBadRequest, param(bad))
		return
	}
	s.mu.Lock()
	s.nextID++
	msg := Message{
		ID:         fmt.Sprintf("wamid.graphtest.%d", s.nextID),
		To:         req.To,
		Body:       *req.Text.Body,
		PreviewURL: req.Text.PreviewURL,
		Raw:        raw,
		Time:       time.Now(),
	}
	s.sent = append(s.sent, msg)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []map[string]string{{"input": req.To, "wa_id": strings.TrimPrefix(req.To, "+")}},
		"messages":          []map[string]string{{"id": msg.ID}},
	})
}

// documented are the Graph API errors a test can inject by code, with the
// title and details Meta's error-code reference gives them.
var documented = map[int]struct{ title, details string }{
	131000: {"Something went wrong", "Message failed to send due to an unknown error."},
	131026: {"Message undeliverable", "Unable to deliver message."},
	131047: {"Re-engagement message", "Message failed to send because more than 24 hours have passed since the customer last replied to this number."},
	131048: {"Spam rate limit hit", "Message failed to send because there are restrictions on how many messages can be sent from this phone number."},
	131056: {"(Business Account, Consumer Account) pair rate limit hit", "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time."},
	133004: {"Server temporarily unavailable", "Server is temporarily unavailable."},
}

func injected(status, code int) graphError {
	details := func(d string) json.RawMessage {
		data, _ := json.Marshal(map[string]string{"messaging_product": "whatsapp", "details": d})
		return data
	}
	if code != 0 {
		if e, ok := documented[code]; ok {
			return graphError{Message: fmt.Sprintf("(#%d) %s", code, e.title), Type: "OAuthException", Code: code, ErrorData: details(e.details)}
		}
		return graphError{Message: fmt.Sprintf("(#%d) graphtest: injected error", code), Type: "OAuthException", Code: code}
	}
	switch {
	case status == http.StatusTooManyRequests:
		return graphError{Message: "(#130429) Rate limit hit", Type: "OAuthException", Code: 130429,
			ErrorData: details("Cloud API message throughput has been reached.")}
	case status == http.StatusServiceUnavailable:
		return graphError{Message: "An unexpected error has occurred. Please retry your request later.", Type: "OAuthException", Code: 2}
	case status >= 500:
		return graphError{Message: "An unknown error has occurred.", Type: "OAuthException", Code: 1}
	}
	return param("Invalid parameter")
}

// drop closes the request's connection without writing an answer.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // aborts the answer all the same
	}
	conn.Close()
}

func (s *Server) mediaURL(w http.ResponseWriter, r *http.Request, version, id string) {
	if !s.authorized(w, r, version) {
		return
	}
	s.mu.Lock()
	m, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusBadRequest, noObject("get", id))
		return
	}
	sum := sha256.Sum256(m.data)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"messaging_product": "whatsapp",
		"url":               s.URL + "/whatsapp_business/attachments/" + id + "?mid=" + id + "&hash=" + hex.EncodeToString(sum[:8]),
		"mime_type":         m.mimeType,
		"sha256":            hex.EncodeToString(sum[:]),
		"file_size":         strconv.Itoa(len(m.data)),
		"id":                id,
	})
}

// download serves the media bytes. The real URL answers only requests
// carrying the access token.
func (s *Server) download(w http.ResponseWriter, r *http.Request, id string) {
	if r.Header.Get("Authorization") != "Bearer "+Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	m, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", m.mimeType)
	w.Write(m.data)
}

func readAll(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err == nil && len(data) > 1<<20 {
		err = errors.New("body too large")
	}
	return data, err
}
