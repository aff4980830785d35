// Package transcriptiontest is a stand-in for an OpenAI-compatible
// speech-to-text endpoint, POST /v1/audio/transcriptions, for tests: a real
// HTTP server on the loopback interface, in the manner of net/http/httptest.
//
// It is strict where the real API is: before it answers, it checks the
// request as OpenAI documents it
// (https://platform.openai.com/docs/api-reference/audio/createTranscription)
// and answers a request the real API refuses with the same status and the
// same error shape, {"error": {"message", "type", "param", "code"}}:
//
//   - no Authorization header, or a key other than the server's: 401,
//     type invalid_request_error, code invalid_api_key;
//   - a body that is not multipart/form-data, or without the part "file":
//     400;
//   - no "model": 400 "you must provide a model parameter";
//   - a model the server does not serve: 404 model_not_found;
//   - a file whose name's extension is not one of the documented formats
//     (flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm), or whose bytes
//     are not the container its name says (an .ogg that does not begin
//     "OggS"): 400 "Invalid file format. Supported formats: [...]";
//   - a body over 25 MB: 413.
//
// A request that passes is answered {"text": ...} with what
// [Server.Transcript] returns, or as [Server.Fail] scripts.
package transcriptiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Formats are the file extensions the API documents as accepted; OpenAI's
// error lists them in this order.
var Formats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// MaxBodyBytes is the documented upload limit, 25 MB.
const MaxBodyBytes = 25 << 20

// Request is a request the server accepted.
type Request struct {
	Model          string
	Filename       string
	FileType       string // the file part's Content-Type
	ResponseFormat string
	Audio          []byte
	// Size is the request body's length in bytes.
	Size int
}

// Server is the stand-in. Create it with [NewServer]; its zero value is
// not usable.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:port/v1": the endpoint is
	// URL + "/audio/transcriptions".
	URL string
	// Key is the API key the server accepts; "" accepts requests without
	// one (a local server).
	Key string

	srv *httptest.Server

	mu       sync.Mutex
	models   []string
	text     func(Request) string
	fails    []failure
	delay    time.Duration
	requests []Request
	calls    int
}

type failure struct {
	status int
	body   string
}

// NewServer starts a server that accepts key and the given models (none
// means any), answering every accepted request with text. It is closed
// when the test ends.
func NewServer(t interface{ Cleanup(func()) }, key string, text string, models ...string) *Server {
	s := &Server{Key: key, models: models, text: func(Request) string { return text }}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Endpoint returns the endpoint's full URL.
func (s *Server) Endpoint() string { return s.URL + "/audio/transcriptions" }

// Transcript sets what accepted requests are answered with.
func (s *Server) Transcript(f func(Request) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = f
}

// Fail makes the next accepted request fail with status and the API's
// error body carrying message (and, for 5xx, type "server_error").
func (s *Server) Fail(status int, message string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, failure{status, errorBody(message, typ, "")})
}

// Delay makes every answer wait d, or until the client gives up.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Requests returns the requests accepted so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls returns the number of requests received, accepted or not.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func errorBody(message, typ, code string) string {
	e := map[string]any{"message": message, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, message, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, errorBody(message, "invalid_request_error", code))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	delay, key := s.delay, s.Key
	s.mu.Unlock()
	// The body is read first: only then does the server notice a client
	// that gave up, which ends the wait.
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "")
		return
	}
	if key != "" {
		auth := r.Header.Get("Authorization")
		got, ok := strings.CutPrefix(auth, "Bearer ")
		switch {
		case auth == "":
			writeError(w, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "")
			return
		case !ok || got != key:
			writeError(w, http.StatusUnauthorized, "Incorrect API key provided: "+maskKey(got)+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key")
			return
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not read the request body.", "")
		return
	}
	if len(body) > MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Maximum content size limit (%d) exceeded (%d bytes read)", MaxBodyBytes, len(body)), "")
		return
	}
	req, msg := parseForm(r.Header.Get("Content-Type"), body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg, "")
		return
	}
	req.Size = len(body)
	s.mu.Lock()
	if len(s.models) > 0 && !slices.Contains(s.models, req.Model) {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "model_not_found")
		return
	}
	s.requests = append(s.requests, req)
	var fail *failure
	if len(s.fails) > 0 {
		fail = &s.fails[0]
		s.fails = s.fails[1:]
	}
	text := s.text(req)
	s.mu.Unlock()
	if fail != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail.status)
		io.WriteString(w, fail.body)
		return
	}
	if req.ResponseFormat == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, text+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"text": text})
}

// parseForm reads the multipart request, returning the error message the
// API gives for a request it refuses.
func parseForm(contentType string, body []byte) (Request, string) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return Request{}, "Invalid Content-Type header (" + contentType + "), expected multipart/form-data. (HINT: If you're using curl, you can pass -H 'Content-Type: multipart/form-data')"
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var req Request
	hasFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Request{}, "Could not parse multipart form"
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return Request{}, "Could not parse multipart form"
		}
		switch p.FormName() {
		case "file":
			hasFile = true
			req.Filename, req.FileType, req.Audio = p.FileName(), p.Header.Get("Content-Type"), data
		case "model":
			req.Model = string(data)
		case "response_format":
			req.ResponseFormat = string(data)
		}
	}
	switch {
	case !hasFile:
		return Request{}, "1 validation error for Request\nbody -> file\n  field required (type=value_error.missing)"
	case req.Model == "":
		return Request{}, "you must provide a model parameter"
	}
	switch req.ResponseFormat {
	case "", "json", "text", "verbose_json", "srt", "vtt":
	default:
		return Request{}, fmt.Sprintf("Invalid response_format %q", req.ResponseFormat)
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(req.Filename), "."))
	if !slices.Contains(Formats, ext) || !looksLike(ext, req.Audio) {
		return Request{}, "Invalid file format. Supported formats: ['" + strings.Join(Formats, "', '") + "']"
	}
	return req, ""
}

// looksLike reports whether data begins as a file of extension ext must,
// for the containers whose signature is fixed.
func looksLike(ext string, data []byte) bool {
	switch ext {
	case "ogg", "oga":
		return bytes.HasPrefix(data, []byte("OggS"))
	case "wav":
		return len(data) >= 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WAVE"
	case "flac":
		return bytes.HasPrefix(data, []byte("fLaC"))
	case "webm":
		return bytes.HasPrefix(data, []byte("\x1a\x45\xdf\xa3"))
	}
	return len(data) > 0
}

// maskKey writes a refused key as OpenAI does, its start and end only.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", 8) + k[len(k)-4:]
}
