package anthropictest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
)

// answer posts a valid request and returns the response body decoded.
func answer(t *testing.T, srv *anthropictest.Server) (int, map[string]json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body(user)))
	req.Header = headers()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return resp.StatusCode, out
}

// Each stop reason comes in the API's message shape, stop_details null
// unless a refusal sets it.
func TestStopReasons(t *testing.T) {
	tests := []struct {
		name    string
		resp    anthropictest.Response
		stop    string
		details string
	}{
		{"end_turn", anthropictest.Text("hi"), `"end_turn"`, `null`},
		{"refusal", anthropictest.Refusal("I can", "cyber", "Declined."), `"refusal"`, `{"type":"refusal","category":"cyber","explanation":"Declined."}`},
		{"refusal with nulls", anthropictest.Refusal("", "", ""), `"refusal"`, `{"type":"refusal","category":null,"explanation":null}`},
		{"max_tokens", anthropictest.CutOff(anthropictest.Text("Here are")), `"max_tokens"`, `null`},
		{"context window", anthropictest.ContextWindowExceeded(anthropictest.Text("Here")), `"model_context_window_exceeded"`, `null`},
		{"pause_turn", anthropictest.Paused(anthropictest.ServerToolUse("srvtoolu_1", "web_search", nil), anthropictest.WebSearchResult("srvtoolu_1", "https://example.com", "T")), `"pause_turn"`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(t)
			srv.Enqueue(tt.resp)
			status, msg := answer(t, srv)
			if status != http.StatusOK || string(msg["stop_reason"]) != tt.stop || string(msg["stop_details"]) != tt.details {
				t.Errorf("status %d, stop_reason %s, stop_details %s; want %s, %s", status, msg["stop_reason"], msg["stop_details"], tt.stop, tt.details)
			}
		})
	}
}

// A recorded response is sent byte for byte.
func TestCassette(t *testing.T) {
	recorded, err := anthropictest.Cassette("basic")
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 2 {
		t.Fatalf("basic has %d responses, want 2", len(recorded))
	}
	srv := anthropictest.NewServer(t)
	srv.Enqueue(recorded[0])
	_, msg := answer(t, srv)
	if string(msg["id"]) != `"msg_01VLZuPg94y7NULJySZhEDJY"` || string(msg["stop_reason"]) != `"tool_use"` {
		t.Errorf("replayed %v", msg)
	}
	if _, err := anthropictest.Cassette("nope"); err == nil {
		t.Error("an unknown cassette loaded")
	}
}

// A hung request is released when the client gives up.
func TestHang(t *testing.T) {
	srv := anthropictest.NewServer(t)
	srv.Enqueue(anthropictest.Hang(), anthropictest.Text("after"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body(user)))
	req.Header = headers()
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the client's timeout", err)
	}
	if status, msg := answer(t, srv); status != http.StatusOK || !strings.Contains(string(msg["content"]), "after") {
		t.Errorf("the next request got %d %v", status, msg)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[0].Status != 0 {
		t.Errorf("requests %d, the hung one's status %d; want 2 and 0", len(reqs), reqs[0].Status)
	}
}

// The 400 and 413 for a request too long, in the API's error shape.
func TestTooLong(t *testing.T) {
	for _, tt := range []struct {
		resp   anthropictest.Response
		status int
		typ    string
		msg    string
	}{
		{anthropictest.PromptTooLong(219898, 200000), 400, "invalid_request_error", "prompt is too long: 219898 tokens > 200000 maximum"},
		{anthropictest.RequestTooLarge(), 413, "request_too_large", "Request exceeds the maximum allowed number of bytes."},
	} {
		srv := anthropictest.NewServer(t)
		srv.Enqueue(tt.resp)
		status, e, _ := post(t, srv, headers(), body(user))
		if status != tt.status || e.Type != "error" || e.Error.Type != tt.typ || !strings.HasPrefix(e.Error.Message, tt.msg) || e.RequestID == "" {
			t.Errorf("%d %+v, want %d %s %q", status, e, tt.status, tt.typ, tt.msg)
		}
	}
}
