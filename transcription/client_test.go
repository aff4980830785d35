package transcription_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/transcription"
	"github.com/mombot/mombot/transcription/transcriptiontest"
)

const key = "sk-test-0123456789abcdef"

func newClient(t *testing.T, srv *transcriptiontest.Server, opts transcription.Options) *transcription.Client {
	t.Helper()
	if opts.URL == "" {
		opts.URL = srv.URL
	}
	if opts.Model == "" {
		opts.Model = "whisper-1"
	}
	c, err := transcription.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTranscribeSendsTheNoteAsDocumented(t *testing.T) {
	srv := transcriptiontest.NewServer(t, key, " Add milk and eggs to the grocery list. ", "whisper-1")
	c := newClient(t, srv, transcription.Options{APIKey: key})
	got, err := c.Transcribe(context.Background(), voiceNote(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Add milk and eggs to the grocery list."; got != want {
		t.Errorf("Transcribe = %q, want %q", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "whisper-1" || r.Filename != "voice-note.ogg" || r.FileType != "audio/ogg" || r.ResponseFormat != "json" {
		t.Errorf("request: model %q, file %q (%s), response_format %q", r.Model, r.Filename, r.FileType, r.ResponseFormat)
	}
	if !bytes.Equal(r.Audio, voiceNote(t)) {
		t.Errorf("the audio sent (%d bytes) is not the voice note as it came (%d bytes)", len(r.Audio), len(voiceNote(t)))
	}
}

func TestTranscribeEndpointForms(t *testing.T) {
	srv := transcriptiontest.NewServer(t, "", "hello")
	for _, u := range []string{srv.URL, srv.URL + "/", srv.Endpoint()} {
		c := newClient(t, srv, transcription.Options{URL: u})
		if got, err := c.Transcribe(context.Background(), voiceNote(t)); err != nil || got != "hello" {
			t.Errorf("url %s: Transcribe = %q, %v", u, got, err)
		}
	}
}

func TestTranscribeRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name    string
		audio   []byte
		max     time.Duration
		want    error
		message string
	}{
		{"over the default 3 minutes", withLength(t, 3*time.Minute+time.Second), 0, apology.ErrVoiceTooLong,
			"Sorry, that voice note is too long for me: I can listen to 3 minutes at most. Could you send a shorter one, or type it?"},
		{"over a configured 30 seconds", voiceNote(t), 5 * time.Second, apology.ErrVoiceTooLong,
			"Sorry, that voice note is too long for me: I can listen to 5 seconds at most. Could you send a shorter one, or type it?"},
		{"not OGG", []byte("ID3\x04\x00\x00\x00\x00\x00\x00 an mp3"), 0, apology.ErrAudioFormat, apology.AudioFormat},
		// The finding: 7,680 s of audio (17 MB) whose positions declare
		// 1 s was uploaded whole.
		{"7,680 s of audio whose positions declare 1 s", repeated(t, 1065, oneSecond), 0, apology.ErrVoiceTooLong,
			"Sorry, that voice note is too long for me: I can listen to 3 minutes at most. Could you send a shorter one, or type it?"},
		{"7 s of audio with 2 MB in its tags", withTags(t, 2<<20), 0, apology.ErrAudioFormat, apology.AudioFormat},
		{"7 s of audio with 100 kB in its tags, for a limit of 10 s", withTags(t, 100_000), 10 * time.Second, apology.ErrAudioFormat, apology.AudioFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := transcriptiontest.NewServer(t, key, "never")
			c := newClient(t, srv, transcription.Options{APIKey: key, MaxDuration: tt.max})
			_, err := c.Transcribe(context.Background(), tt.audio)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Transcribe: %v, want %v", err, tt.want)
			}
			if got := apology.Message(err); got != tt.message {
				t.Errorf("the person reads %q, want %q", got, tt.message)
			}
			if n := srv.Calls(); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
	// Exactly the cap is fine.
	srv := transcriptiontest.NewServer(t, key, "ok")
	c := newClient(t, srv, transcription.Options{APIKey: key})
	if _, err := c.Transcribe(context.Background(), withLength(t, 3*time.Minute)); err != nil {
		t.Errorf("a note of exactly 3 minutes: %v", err)
	}
}

// The upload is bounded by the duration cap at 64 kbit/s and 10% more:
// 1,584,000 bytes for 3 minutes. A note of 7 s with 1.5 MB of tags fits
// and is sent; one whose request would pass the limit by a byte is not.
func TestTranscribeUploadLimit(t *testing.T) {
	if got, want := transcription.UploadLimit(3*time.Minute), 1_584_000; got != want {
		t.Errorf("UploadLimit(3m) = %d, want %d", got, want)
	}
	if got, want := transcription.UploadLimit(time.Hour), transcription.MaxUploadBytes; got != want {
		t.Errorf("UploadLimit(1h) = %d, want MaxUploadBytes, %d", got, want)
	}
	srv := transcriptiontest.NewServer(t, key, "ok")
	c := newClient(t, srv, transcription.Options{APIKey: key})
	if _, err := c.Transcribe(context.Background(), withTags(t, 1_500_000)); err != nil {
		t.Fatalf("7 s with 1.5 MB of tags: %v", err)
	}
	sent := srv.Requests()[0].Size
	if sent > 1_584_000 {
		t.Fatalf("a request of %d bytes was sent, over 1,584,000", sent)
	}
	// The same note with tags larger by what leaves its request over the
	// limit (by a byte, and the lacing values and page headers the tags
	// take).
	over := withTags(t, 1_500_000+1_584_000-sent+1)
	if _, err := c.Transcribe(context.Background(), over); !errors.Is(err, apology.ErrAudioFormat) {
		t.Errorf("a request of 1,584,001 bytes: %v, want an error wrapping ErrAudioFormat", err)
	}
	for _, r := range srv.Requests() {
		if r.Size > 1_584_000 {
			t.Errorf("a request of %d bytes was sent", r.Size)
		}
	}
	if n := srv.Calls(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestTranscribeFailures(t *testing.T) {
	tests := []struct {
		name   string
		key    string // the client's
		setup  func(*transcriptiontest.Server)
		opts   transcription.Options
		want   error
		status int // of the *APIError, 0 for none
		detail string
	}{
		{name: "a wrong key", key: "sk-wrong-key-999999", want: apology.ErrTranscription, status: 401, detail: "invalid_api_key"},
		{name: "no key", key: "", want: apology.ErrTranscription, status: 401},
		{name: "a model the endpoint does not serve", key: key, opts: transcription.Options{Model: "whisper-9"}, want: apology.ErrTranscription, status: 404, detail: "does not exist"},
		{name: "a server error", key: key, setup: func(s *transcriptiontest.Server) {
			s.Fail(500, "The server had an error while processing your request.")
		},
			want: apology.ErrTranscription, status: 500, detail: "server had an error"},
		{name: "rate limited", key: key, setup: func(s *transcriptiontest.Server) { s.Fail(429, "Rate limit reached for whisper-1") },
			want: apology.ErrTranscription, status: 429, detail: "Rate limit"},
		{name: "silence", key: key, setup: func(s *transcriptiontest.Server) {
			s.Transcript(func(transcriptiontest.Request) string { return "  \n" })
		}, want: apology.ErrVoiceEmpty},
		{name: "no answer in time", key: key, setup: func(s *transcriptiontest.Server) { s.Delay(10 * time.Second) },
			opts: transcription.Options{Timeout: 200 * time.Millisecond}, want: apology.ErrTranscription, detail: "no answer within 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := transcriptiontest.NewServer(t, key, "words", "whisper-1")
			if tt.setup != nil {
				tt.setup(srv)
			}
			opts := tt.opts
			opts.APIKey = tt.key
			c := newClient(t, srv, opts)
			start := time.Now()
			_, err := c.Transcribe(context.Background(), voiceNote(t))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Transcribe: %v, want %v", err, tt.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("Transcribe took %s: not bounded by its timeout", time.Since(start))
			}
			var apiErr *transcription.APIError
			if tt.status != 0 && (!errors.As(err, &apiErr) || apiErr.StatusCode != tt.status) {
				t.Errorf("Transcribe: %v, want an *APIError with status %d", err, tt.status)
			}
			if !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("error %q does not say %q", err, tt.detail)
			}
			for _, secret := range []string{key, tt.key} {
				if secret != "" && strings.Contains(err.Error(), secret[len(secret)-6:]) {
					t.Errorf("error %q holds part of the key", err)
				}
			}
		})
	}
}

func TestTranscribeStopsWithItsContext(t *testing.T) {
	srv := transcriptiontest.NewServer(t, key, "words")
	srv.Delay(10 * time.Second)
	c := newClient(t, srv, transcription.Options{APIKey: key})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Transcribe(ctx, voiceNote(t)); !errors.Is(err, apology.ErrTranscription) {
		t.Errorf("Transcribe with an ended context: %v", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []transcription.Options{
		{Model: "whisper-1"},
		{URL: "ftp://example.com/v1", Model: "whisper-1"},
		{URL: "https://user:sk-secret@api.openai.com/v1", Model: "whisper-1"},
		{URL: "https://api.openai.com/v1"},
		{URL: "https://api.openai.com/v1", Model: "whisper-1", MaxDuration: -time.Second},
		{URL: "https://api.openai.com/v1", Model: "whisper-1", Timeout: -time.Second},
		// The key would cross a network in the clear.
		{URL: "http://api.openai.com/v1", Model: "whisper-1"},
		{URL: "http://whisper:8000/v1", Model: "whisper-1"},
		{URL: "http://10.0.0.7:8000/v1", Model: "whisper-1"},
	} {
		if _, err := transcription.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		} else if strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("New: %v holds the secret of the URL", err)
		}
	}
	// https anywhere, http to this machine, and http anywhere for a test
	// that opts in.
	for _, o := range []transcription.Options{
		{URL: "https://api.groq.com/openai/v1", Model: "whisper-large-v3-turbo"},
		{URL: "http://127.0.0.1:8000/v1", Model: "whisper-1"},
		{URL: "http://localhost:8000/v1", Model: "whisper-1"},
		{URL: "http://[::1]:8000/v1", Model: "whisper-1"},
		{URL: "http://whisper:8000/v1", Model: "whisper-1", InsecureTestEndpoint: true},
	} {
		if _, err := transcription.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}

// The key goes only where the endpoint is: a redirect to another port of
// the same host (which Go's own client would follow with the key) gets
// the request without it.
func TestTranscribeKeyDoesNotFollowRedirects(t *testing.T) {
	stt := transcriptiontest.NewServer(t, "", "words") // accepts requests without a key
	var auth []string
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, stt.Endpoint(), http.StatusPermanentRedirect)
	}))
	t.Cleanup(front.Close)
	var got []string
	spy := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		got = append(got, r.URL.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := newClient(t, stt, transcription.Options{URL: front.URL + "/v1", APIKey: key, HTTPClient: spy})
	if text, err := c.Transcribe(context.Background(), voiceNote(t)); err != nil || text != "words" {
		t.Fatalf("Transcribe through a redirect: %q, %v", text, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 1 || auth[0] != "Bearer "+key {
		t.Errorf("the endpoint got %q, want the key", auth)
	}
	stHost := strings.TrimPrefix(strings.TrimSuffix(stt.URL, "/v1"), "http://")
	if len(got) != 2 || got[1] != stHost+" " {
		t.Errorf("requests %q, want the second, to %s, without the key", got, stHost)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStandInEnforcesTheDocumentedRequest sends requests the real API
// refuses straight to the stand-in, so that a client bug would fail.
func TestStandInEnforcesTheDocumentedRequest(t *testing.T) {
	srv := transcriptiontest.NewServer(t, key, "words")
	post := func(fields map[string]string, filename string, file []byte) (int, string) {
		var b bytes.Buffer
		w := multipartWriter(&b, fields, filename, file)
		req, _ := http.NewRequest(http.MethodPost, srv.Endpoint(), &b)
		req.Header.Set("Content-Type", w)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		return resp.StatusCode, body.String()
	}
	tests := []struct {
		name     string
		fields   map[string]string
		filename string
		file     []byte
		status   int
		message  string
	}{
		{"accepted", map[string]string{"model": "whisper-1"}, "note.ogg", voiceNote(t), 200, `"text":"words"`},
		{"no model", nil, "note.ogg", voiceNote(t), 400, "you must provide a model parameter"},
		{"no file", map[string]string{"model": "whisper-1"}, "", nil, 400, "field required"},
		{"an .opus name, not a documented format", map[string]string{"model": "whisper-1"}, "note.opus", voiceNote(t), 400, "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']"},
		{"an .ogg that is not OGG", map[string]string{"model": "whisper-1"}, "note.ogg", []byte("not audio"), 400, "Invalid file format."},
		{"no extension", map[string]string{"model": "whisper-1"}, "blob", voiceNote(t), 400, "Invalid file format."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(tt.fields, tt.filename, tt.file)
			if status != tt.status || !strings.Contains(body, tt.message) {
				t.Errorf("got %d %s, want %d with %q", status, body, tt.status, tt.message)
			}
			if status == 400 && !strings.Contains(body, `"type":"invalid_request_error"`) {
				t.Errorf("error body %s is not in the API's shape", body)
			}
		})
	}
}
