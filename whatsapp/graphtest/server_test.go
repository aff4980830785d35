package graphtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp/graphtest"
)

// call makes one request to the fake and returns the status and the body.
func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestSendRules(t *testing.T) {
	s := graphtest.NewServer(t)
	send := s.URL + "/" + graphtest.Version + "/" + graphtest.PhoneNumberID + "/messages"
	good := `{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"text","text":{"preview_url":false,"body":"hi"}}`
	tests := []struct {
		name  string
		url   string
		token string
		body  string
		code  int
		error string // part of error.message
	}{
		{"good", send, graphtest.Token, good, 200, ""},
		{"no token", send, "", good, 400, "active access token"},
		{"wrong token", send, "EAAx", good, 401, "Invalid OAuth access token"},
		{"bad version", s.URL + "/21/" + graphtest.PhoneNumberID + "/messages", graphtest.Token, good, 400, "Unknown path"},
		{"other phone number id", s.URL + "/v21.0/123/messages", graphtest.Token, good, 400, "Object with ID '123' does not exist"},
		{"no messaging_product", send, graphtest.Token, `{"to":"1","type":"text","text":{"body":"hi"}}`, 400, "messaging_product is required"},
		{"no to", send, graphtest.Token, `{"messaging_product":"whatsapp","type":"text","text":{"body":"hi"}}`, 400, "to is required"},
		{"no body", send, graphtest.Token, `{"messaging_product":"whatsapp","to":"1","type":"text","text":{}}`, 400, "text['body'] is required"},
		{"body too long", send, graphtest.Token, `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"` + strings.Repeat("é", 4097) + `"}}`, 400, "at most 4096 characters"},
		{"body at the limit", send, graphtest.Token, `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"` + strings.Repeat("é", 4096) + `"}}`, 200, ""},
		{"emoji count two", send, graphtest.Token, `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"` + strings.Repeat("😀", 2048) + `x"}}`, 400, "at most 4096 characters"},
		{"emoji at the limit", send, graphtest.Token, `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"` + strings.Repeat("😀", 2048) + `"}}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, http.MethodPost, tt.url, tt.token, tt.body)
			if code != tt.code {
				t.Fatalf("status %d, want %d: %s", code, tt.code, body)
			}
			if tt.error == "" {
				return
			}
			var e struct {
				Error struct {
					Message   string `json:"message"`
					Type      string `json:"type"`
					Code      int    `json:"code"`
					FBTraceID string `json:"fbtrace_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == 0 || e.Error.Type == "" || e.Error.FBTraceID == "" {
				t.Errorf("error %s is not in the Graph API's shape", body)
			}
			if !strings.Contains(e.Error.Message, tt.error) {
				t.Errorf("error message %q lacks %q", e.Error.Message, tt.error)
			}
		})
	}
	sent := s.Sent()
	if len(sent) != 3 || sent[0].To != "16505551234" || sent[0].Body != "hi" {
		t.Errorf("recorded %+v", sent)
	}
	if n := s.Attempts(); n != len(tests) {
		t.Errorf("%d attempts recorded, want %d", n, len(tests))
	}
}

func TestFailNext(t *testing.T) {
	s := graphtest.NewServer(t)
	send := s.URL + "/" + graphtest.Version + "/" + graphtest.PhoneNumberID + "/messages"
	body := `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"hi"}}`
	s.FailNext(1, 429)
	s.FailNext(1, 500)
	for _, want := range []struct {
		code int
		in   string
	}{{429, `"code":130429`}, {500, `"code":1,`}, {200, `"messages":[{"id":"wamid.`}} {
		code, got := call(t, http.MethodPost, send, graphtest.Token, body)
		if code != want.code || !strings.Contains(got, want.in) {
			t.Errorf("got %d %s, want %d with %s", code, got, want.code, want.in)
		}
	}
	sent, err := s.WaitSent(context.Background(), 1)
	if err != nil || len(sent) != 1 {
		t.Errorf("WaitSent = %v, %v", sent, err)
	}
}

func TestFailNextWith(t *testing.T) {
	s := graphtest.NewServer(t)
	send := s.URL + "/" + graphtest.Version + "/" + graphtest.PhoneNumberID + "/messages"
	body := `{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"hi"}}`
	s.FailNextWith(1, graphtest.Failure{Status: 400, Code: 131056, RetryAfter: 1500 * time.Millisecond})
	s.FailNextWith(1, graphtest.Failure{Status: 503, Code: 133004})
	s.FailNextWith(1, graphtest.Failure{Drop: true})

	req, _ := http.NewRequest(http.MethodPost, send, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+graphtest.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(data), `"code":131056`) || !strings.Contains(string(data), "pair rate limit hit") {
		t.Errorf("pair rate limit: %d %s", resp.StatusCode, data)
	}
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 (whole seconds, rounded up)", got)
	}
	if code, got := call(t, http.MethodPost, send, graphtest.Token, body); code != 503 || !strings.Contains(got, `"code":133004`) {
		t.Errorf("server unavailable: %d %s", code, got)
	}
	req, _ = http.NewRequest(http.MethodPost, send, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+graphtest.Token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a dropped connection answered %d", resp.StatusCode)
	}
	if code, got := call(t, http.MethodPost, send, graphtest.Token, body); code != 200 {
		t.Errorf("after the failures: %d %s", code, got)
	}
	if n, sent := s.Attempts(), len(s.Sent()); n != 4 || sent != 1 {
		t.Errorf("%d attempts, %d sent; want 4, 1", n, sent)
	}
}

func TestMedia(t *testing.T) {
	s := graphtest.NewServer(t)
	s.AddMedia("42", []byte("photo bytes"), "image/png")
	code, body := call(t, http.MethodGet, s.URL+"/v21.0/42", graphtest.Token, "")
	if code != 200 {
		t.Fatalf("media url: %d %s", code, body)
	}
	var info struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
		FileSize string `json:"file_size"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil || info.MimeType != "image/png" || info.FileSize != "11" {
		t.Fatalf("media info %s", body)
	}
	if code, _ := call(t, http.MethodGet, info.URL, "", ""); code != http.StatusUnauthorized {
		t.Errorf("download without the token: %d, want 401", code)
	}
	if code, got := call(t, http.MethodGet, info.URL, graphtest.Token, ""); code != 200 || got != "photo bytes" {
		t.Errorf("download: %d %q", code, got)
	}
	if code, body := call(t, http.MethodGet, s.URL+"/v21.0/43", graphtest.Token, ""); code != 400 || !strings.Contains(body, "does not exist") {
		t.Errorf("unknown media: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodGet, s.URL+"/v21.0/42", "EAAx", ""); code != 401 {
		t.Errorf("media url with a wrong token: %d", code)
	}
}

func TestWaitSentHonoursContext(t *testing.T) {
	s := graphtest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitSent(ctx, 1); err == nil {
		t.Error("WaitSent returned no error with nothing sent and a cancelled context")
	}
}
