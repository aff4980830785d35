package anthropictest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant/anthropictest"
)

type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func post(t *testing.T, srv *anthropictest.Server, header http.Header, body string) (int, apiError, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e apiError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e, resp.Header
}

func headers() http.Header {
	return http.Header{
		"X-Api-Key":         {anthropictest.APIKey},
		"Anthropic-Version": {anthropictest.Version},
		"Content-Type":      {"application/json"},
	}
}

const user = `{"role":"user","content":"hi"}`

func body(msgs ...string) string {
	return `{"model":"claude-test","max_tokens":100,"tools":[{"name":"search","description":"d","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

const use1 = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"search","input":{}}]}`

func TestHeaders(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(http.Header)
		status int
		typ    string
		msg    string
	}{
		{"no key", func(h http.Header) { h.Del("X-Api-Key") }, 401, "authentication_error", "x-api-key header is required"},
		{"wrong key", func(h http.Header) { h.Set("X-Api-Key", "sk-wrong") }, 401, "authentication_error", "invalid x-api-key"},
		{"no version", func(h http.Header) { h.Del("Anthropic-Version") }, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"bad version", func(h http.Header) { h.Set("Anthropic-Version", "2024-10-22") }, 400, "invalid_request_error", `anthropic-version: "2024-10-22" is not a valid version`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(t)
			h := headers()
			tt.edit(h)
			status, e, hdr := post(t, srv, h, body(user))
			if status != tt.status || e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message != tt.msg {
				t.Errorf("got %d %+v, want %d %s %q", status, e, tt.status, tt.typ, tt.msg)
			}
			if hdr.Get("request-id") == "" || e.RequestID != hdr.Get("request-id") {
				t.Errorf("request id header %q, body %q", hdr.Get("request-id"), e.RequestID)
			}
		})
	}
}

func TestRules(t *testing.T) {
	big := strings.Repeat("A", anthropictest.MaxImageBase64+4)
	tests := []struct {
		name string
		body string
		msg  string // "" means accepted
	}{
		{"valid", body(user), ""},
		{"tool round", body(user, use1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), ""},
		{"tool result then text", body(user, use1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"},{"type":"text","text":"more"}]}`), ""},
		{"consecutive user messages", body(user, user), ""},
		{"empty final assistant", body(user, `{"role":"assistant","content":[]}`), ""},
		{"unknown field", `{"model":"m","max_tokens":1,"messages":[` + user + `],"temperatur":1}`, "temperatur: Extra inputs are not permitted"},
		{"no model", `{"max_tokens":1,"messages":[` + user + `]}`, "model: Field required"},
		{"no max_tokens", `{"model":"m","messages":[` + user + `]}`, "max_tokens: Field required"},
		{"no messages", `{"model":"m","max_tokens":1,"messages":[]}`, "messages: at least one message is required"},
		{"first not user", body(`{"role":"assistant","content":"hi"}`, user), `messages: first message must use the "user" role`},
		{"bad role", body(user, `{"role":"system","content":"x"}`), "messages.1.role: Input should be 'user' or 'assistant'"},
		{"extra message field", body(`{"role":"user","content":"hi","name":"x"}`), "messages.0.name: Extra inputs are not permitted"},
		{"empty string", body(`{"role":"user","content":""}`), "messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"empty list", body(user, `{"role":"assistant","content":[]}`, user), "messages.1: all messages must have non-empty content except for the optional final assistant message"},
		{"empty text block", body(`{"role":"user","content":[{"type":"text","text":""}]}`), "messages: text content blocks must be non-empty"},
		{"white space text", body(`{"role":"user","content":[{"type":"text","text":" \n"}]}`), "messages: text content blocks must contain non-whitespace text"},
		{"white space string", body(`{"role":"user","content":"  "}`), "messages: text content blocks must contain non-whitespace text"},
		{"tool_use unanswered", body(user, use1, user), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"tool_use last", body(user, use1), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"text before result", body(user, use1, `{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"unexpected result", body(user, use1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"},{"type":"tool_result","tool_use_id":"toolu_9","content":"r"}]}`), "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"duplicate tool id", body(user, use1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`, use1), "messages.3.content.0: `tool_use` ids must be unique"},
		{"tool_use input a list", body(user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"search","input":[1]}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), "messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"tool_use input a string", body(user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"search","input":"q"}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), "messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"tool_use input null", body(user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"search","input":null}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), "messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"tool_use without input", body(user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"search"}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`), "messages.1.content.0.tool_use.input: Field required"},
		{"tool_use in user message", body(`{"role":"user","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}`), "messages.0.content.0.type: Input tag 'tool_use' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'tool_result', 'search_result'"},
		{"tools undefined", `{"model":"m","max_tokens":1,"messages":[` + user + `,` + use1 + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}]}`, "Requests which include `tool_use` or `tool_result` blocks must define tools."},
		{"bad tool name", `{"model":"m","max_tokens":1,"tools":[{"name":"a b","input_schema":{"type":"object"}}],"messages":[` + user + `]}`, "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"image type", body(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"Qk0="}}]}`), "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{"image too large", body(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + big + `"}}]}`), "messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes"},
		{"five breakpoints", `{"model":"m","max_tokens":1,"cache_control":{"type":"ephemeral"},"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}},{"type":"text","text":"t","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]}`, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(t)
			srv.Enqueue(anthropictest.Text("ok"))
			status, e, _ := post(t, srv, headers(), tt.body)
			if tt.msg == "" {
				if status != 200 {
					t.Fatalf("rejected: %d %s", status, e.Error.Message)
				}
				return
			}
			if status != 400 || e.Error.Type != "invalid_request_error" || e.Error.Message != tt.msg {
				t.Errorf("got %d %s %q\nwant 400 invalid_request_error %q", status, e.Error.Type, e.Error.Message, tt.msg)
			}
			if got := srv.Rejected(); len(got) != 1 || srv.Pending() != 1 {
				t.Errorf("Rejected() = %q, pending %d", got, srv.Pending())
			}
		})
	}
}

func TestScriptedResponses(t *testing.T) {
	srv := anthropictest.NewServer(t)
	srv.Enqueue(
		anthropictest.ToolUse("Looking.", anthropictest.Call{ID: "toolu_x", Name: "search", Input: map[string]string{"q": "a"}}),
		anthropictest.Response{Content: []json.RawMessage{anthropictest.TextBlock("hi")}, Usage: &anthropictest.Usage{InputTokens: 3, OutputTokens: 4, CacheCreationInputTokens: 5, CacheReadInputTokens: 6}},
		anthropictest.Overloaded(),
	)
	var got []map[string]any
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body(user)))
		req.Header = headers()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		m["status"] = resp.StatusCode
		got = append(got, m)
	}
	if got[0]["stop_reason"] != "tool_use" || got[0]["status"] != 200 {
		t.Errorf("tool use response = %v", got[0])
	}
	usage, _ := json.Marshal(got[1]["usage"])
	if string(usage) != `{"cache_creation_input_tokens":5,"cache_read_input_tokens":6,"input_tokens":3,"output_tokens":4}` || got[1]["stop_reason"] != "end_turn" {
		t.Errorf("text response = %v", got[1])
	}
	if got[2]["status"] != 529 {
		t.Errorf("overloaded = %v", got[2])
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !bytes.Equal(reqs[0].Body, []byte(body(user))) || len(srv.Rejected()) != 0 {
		t.Errorf("recorded %d requests, rejected %q", len(reqs), srv.Rejected())
	}
}

// postUsage sends body and returns the usage of the fake's answer.
func postUsage(t *testing.T, srv *anthropictest.Server, body string) anthropictest.Usage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
	req.Header = headers()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct{ Usage anthropictest.Usage }
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return m.Usage
}

// TestRoute: requests for a routed model are answered by its function and
// take nothing from the queue; they are still checked against the API's
// rules; other models take the queue; a nil function removes the route.
func TestRoute(t *testing.T) {
	srv := anthropictest.NewServer(t)
	srv.Route("claude-cheap", func(r anthropictest.Request) anthropictest.Response {
		return anthropictest.Text("summary of " + r.Params.Model)
	})
	srv.Enqueue(anthropictest.Text("scripted"))
	send := func(model, msgs string) (int, string) {
		t.Helper()
		b := `{"model":"` + model + `","max_tokens":100,"messages":[` + msgs + `]}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(b))
		req.Header = headers()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Content []struct{ Text string }
			Error   struct{ Message string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if len(m.Content) > 0 {
			return resp.StatusCode, m.Content[0].Text
		}
		return resp.StatusCode, m.Error.Message
	}
	for _, c := range []struct {
		model, msgs string
		status      int
		text        string
	}{
		{"claude-cheap", user, 200, "summary of claude-cheap"},
		{"claude-cheap", `{"role":"assistant","content":"hi"}`, 400, "messages: first message must use the \"user\" role"},
		{"claude-test", user, 200, "scripted"},
		{"claude-cheap", user, 200, "summary of claude-cheap"},
	} {
		if status, text := send(c.model, c.msgs); status != c.status || !strings.Contains(text, c.text) {
			t.Errorf("%s: %d %q, want %d %q", c.model, status, text, c.status, c.text)
		}
	}
	srv.Route("claude-cheap", nil)
	if status, text := send("claude-cheap", user); status != 500 || !strings.Contains(text, "no scripted response left") {
		t.Errorf("after the route was removed: %d %q, want the empty queue's 500", status, text)
	}
}
