package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// APIKey is the key the fake accepts.
const APIKey = "sk-ant-test-fake-key"

// Request is one request the fake received, valid or not.
type Request struct {
	Header http.Header
	// Body is the request body exactly as received.
	Body []byte
	// Params is Body decoded; it is zero when Body is not JSON.
	Params Params
	// Status is the status the fake answered with.
	Status int
	// Rejection is the error message the fake answered with when the
	// request broke one of the API's rules; it is empty otherwise.
	Rejection string
	// Usage is the usage the fake answered with, nil for an error.
	Usage *Usage

	prompt prompt // Body as the prompt cache sees it, if it was accepted
}

// Params are the fields of a Messages request that tests look at. The
// JSON values are kept as they were sent, byte for byte.
type Params struct {
	Model        string            `json:"model"`
	MaxTokens    int               `json:"max_tokens"`
	System       json.RawMessage   `json:"system"`
	Tools        json.RawMessage   `json:"tools"`
	CacheControl json.RawMessage   `json:"cache_control"`
	Messages     []json.RawMessage `json:"messages"`
}

// Server is a fake Messages API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of the server, to pass to option.WithBaseURL.
	URL string

	srv    *httptest.Server
	closed chan struct{} // closed when the test ends, to release hung requests

	mu       sync.Mutex
	now      func() time.Time
	cache    cache
	window   int // the context window, in tokens
	queue    []Response
	respond  func(Request) Response
	routes   map[string]func(Request) Response // by model
	requests []Request
	nextID   int
}

// NewServer starts a fake Messages API and stops it when t's test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{closed: make(chan struct{}), now: time.Now, cache: cache{min: -1}, window: DefaultContextWindow}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.closed) }) // runs first: Close waits for hung requests
	return s
}

// Client returns an SDK client for the fake: its base URL, the fake's key,
// no credentials from the environment, and no retries unless opts ask for
// them. Later opts override earlier ones.
func (s *Server) Client(opts ...option.RequestOption) anthropic.Client {
	base := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(s.URL),
		option.WithAPIKey(APIKey),
		option.WithMaxRetries(0),
	}
	return anthropic.NewClient(append(base, opts...)...)
}

// SetNow sets the clock of the prompt cache, so that a test can let
// entries expire without sleeping; the default is time.Now.
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetCacheMinimum sets the minimum cacheable prompt length, in tokens, for
// every model; a negative n restores each model's (MinCacheableTokens).
// Tests with short prompts set it low to see caching at all.
func (s *Server) SetCacheMinimum(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.min = max(n, -1)
}

// DefaultContextWindow is the context window the fake enforces unless
// [Server.SetContextWindow] changes it: 200,000 tokens, the standard
// window of the Claude models.
const DefaultContextWindow = 200_000

// SetContextWindow sets the most prompt tokens (by the fake's estimate, see
// cache.go) a request may hold; a longer one is refused with the API's 400
// "prompt is too long: N tokens > M maximum".
func (s *Server) SetContextWindow(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = tokens
}

// Enqueue appends scripted responses. Each valid request takes the first
// one left; requests the fake rejects take none.
func (s *Server) Enqueue(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Respond sets the function that answers valid requests once the queue is
// empty. It is called with the server's lock released.
func (s *Server) Respond(f func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

// Route sets the function that answers the valid requests for model,
// before the queue and [Server.Respond]: the requests of a second caller
// with a model of its own (a summarizer on a cheaper model) are answered
// apart from the scripted conversation, whenever they come. A nil f
// removes the route. f is called with the server's lock released.
func (s *Server) Route(model string, f func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		delete(s.routes, model)
		return
	}
	if s.routes == nil {
		s.routes = map[string]func(Request) Response{}
	}
	s.routes[model] = f
}

// Pending returns how many enqueued responses are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Rejected returns, for every request the fake refused because it broke
// one of the API's rules, its status and message. Scripted errors are not
// included.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if r.Rejection != "" {
			out = append(out, fmt.Sprintf("%d %s", r.Status, r.Rejection))
		}
	}
	return out
}

func (s *Server) requestID() string {
	s.nextID++
	return fmt.Sprintf("req_fake_%04d", s.nextID)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &rec.Params)

	s.mu.Lock()
	reqID := s.requestID()
	s.mu.Unlock()

	w.Header().Set("request-id", reqID)
	w.Header().Set("Content-Type", "application/json")

	if apiErr := checkHTTP(r, APIKey); apiErr != nil {
		s.reject(w, &rec, reqID, apiErr)
		return
	}
	if apiErr := checkBody(body); apiErr != nil {
		s.reject(w, &rec, reqID, apiErr)
		return
	}
	p, apiErr := parsePrompt(body)
	if apiErr != nil {
		s.reject(w, &rec, reqID, apiErr)
		return
	}
	rec.prompt = p
	s.mu.Lock()
	window := s.window
	s.mu.Unlock()
	if n := p.tokens(); n > window {
		// The API's text for a prompt over the context window.
		s.reject(w, &rec, reqID, invalid("prompt is too long: %d tokens > %d maximum", n, window))
		return
	}

	s.mu.Lock()
	var resp Response
	var ok bool
	respond := s.respond
	if route := s.routes[rec.Params.Model]; route != nil {
		respond = route
	} else if len(s.queue) > 0 {
		resp, s.queue, ok = s.queue[0], s.queue[1:], true
	}
	s.mu.Unlock()
	if !ok {
		if respond == nil {
			s.reject(w, &rec, reqID, &apiError{http.StatusInternalServerError, "api_error", "anthropictest: no scripted response left"})
			return
		}
		resp = respond(rec)
	}
	if resp.Hang {
		s.record(rec) // Status 0: never answered
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		return
	}

	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.Error == nil {
		// The prompt is cached whatever usage the response scripts.
		s.mu.Lock()
		u := s.cache.apply(rec.prompt, rec.Params.Model, s.now())
		s.mu.Unlock()
		if resp.Usage == nil {
			u.OutputTokens = outputTokens(resp.Content)
			resp.Usage = &u
		}
	}
	rec.Usage = resp.Usage
	status, out := resp.render(reqID, rec.Params.Model, s.messageID())
	rec.Status = status
	s.record(rec)
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func (s *Server) messageID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("msg_fake_%04d", s.nextID)
}

func (s *Server) reject(w http.ResponseWriter, rec *Request, reqID string, e *apiError) {
	rec.Status = e.status
	rec.Rejection = e.message
	s.record(*rec)
	w.WriteHeader(e.status)
	_, _ = w.Write(errorBody(e.errType, e.message, reqID))
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

func errorBody(errType, message, reqID string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": errType, "message": message},
		"request_id": reqID,
	})
	return bytes.TrimSpace(b.Bytes())
}

// outputTokens estimates the tokens of a response's content as the
// prompt's are, at 4 bytes of JSON per block, and at least one.
func outputTokens(content []json.RawMessage) int {
	n := 0
	for _, b := range content {
		n += (len(b) + 3) / 4
	}
	return max(n, 1)
}
