package anthropictest

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Responses for every stop_reason and failure the Messages API documents,
// in its shapes. Sources:
//   - stop reasons: https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons
//   - refusals and stop_details ({"type":"refusal","category":...,
//     "explanation":...}, either of the last two null):
//     https://platform.claude.com/docs/en/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals
//     and the SDK's RefusalStopDetails
//   - server tools and pause_turn: https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools
//     (server_tool_use ids start "srvtoolu_"; the result block, such as
//     web_search_tool_result, follows the call in the same assistant
//     content, paired by tool_use_id)
//   - errors: https://docs.claude.com/en/api/errors (413 request_too_large,
//     529 overloaded_error, the error shape); the 400 for a prompt over the
//     context window reads "prompt is too long: 219898 tokens > 200000
//     maximum" (as reported from the API in
//     https://github.com/earendil-works/pi/issues/102).

// Refusal returns a response the model declined, with stop_reason
// "refusal": partial text, if any, and stop_details with category and
// explanation ("" sends null).
func Refusal(partial, category, explanation string) Response {
	var r Response
	if partial != "" {
		r.Content = append(r.Content, TextBlock(partial))
	}
	r.StopReason = "refusal"
	r.StopDetails = marshal(struct {
		Type        string  `json:"type"`
		Category    *string `json:"category"`
		Explanation *string `json:"explanation"`
	}{"refusal", nullable(category), nullable(explanation)})
	return r
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CutOff returns r as the output limit cut it off: stop_reason
// "max_tokens". Its last block is the incomplete one; with a tool_use, its
// input is what the model had written, such as {"items":["milk","br"]}.
func CutOff(r Response) Response {
	r.StopReason = "max_tokens"
	return r
}

// ContextWindowExceeded returns r as the context window cut it off:
// stop_reason "model_context_window_exceeded".
func ContextWindowExceeded(r Response) Response {
	r.StopReason = "model_context_window_exceeded"
	return r
}

// Paused returns a response with the given content and stop_reason
// "pause_turn": the API paused a long server-side tool loop, to be
// continued by sending the content back as the last assistant message.
func Paused(content ...json.RawMessage) Response {
	return Response{Content: content, StopReason: "pause_turn"}
}

// ServerToolUse returns a server_tool_use block: a call of a tool the API
// runs itself, such as web_search.
func ServerToolUse(id, name string, input any) json.RawMessage {
	if input == nil {
		input = map[string]any{}
	}
	return marshal(struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Name  string `json:"name"`
		Input any    `json:"input"`
	}{"server_tool_use", id, name, input})
}

// WebSearchResult returns the web_search_tool_result block answering the
// server_tool_use id, with one result.
func WebSearchResult(id, url, title string) json.RawMessage {
	type result struct {
		Type             string `json:"type"`
		URL              string `json:"url"`
		Title            string `json:"title"`
		EncryptedContent string `json:"encrypted_content"`
		PageAge          any    `json:"page_age"`
	}
	return marshal(struct {
		Type      string   `json:"type"`
		ToolUseID string   `json:"tool_use_id"`
		Content   []result `json:"content"`
	}{"web_search_tool_result", id, []result{{"web_search_result", url, title, "EqgfCioIARgBIiQ3", nil}}})
}

// PromptTooLong returns the API's 400 for a request over the model's
// context window.
func PromptTooLong(tokens, maximum int) Response {
	return Fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, maximum))
}

// RequestTooLarge returns the 413 request_too_large that Cloudflare
// answers a request over 32 MB with.
func RequestTooLarge() Response {
	return Fail(http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes. The maximum request size is 32 MB for standard API endpoints.")
}

// Hang returns a response that never comes.
func Hang() Response { return Response{Hang: true} }

// RetryAfter returns r with a retry-after header of seconds.
func RetryAfter(r Response, seconds int) Response {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Retry-After", strconv.Itoa(seconds))
	r.Header = h
	return r
}

//go:embed testdata/cassettes/*.json
var cassettes embed.FS

// Cassette returns the responses recorded from the real API in the SDK's
// cassette name (its toolrunner/testdata/cassettes/tool_runner_NAME.yaml,
// the response bodies copied byte for byte into testdata/cassettes, in
// order), to replay with [Server.Enqueue]. The cassettes are "basic" (a
// get_weather call, then the answer), "concurrent" (three get_weather
// rounds) and "tool_call_error" (a call, an error result, the call again,
// the answer); their tool is get_weather, with input {"city": ...,
// "units": ...}.
func Cassette(name string) ([]Response, error) {
	data, err := cassettes.ReadFile("testdata/cassettes/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("anthropictest: cassette %q: %w", name, err)
	}
	var c struct {
		Responses []json.RawMessage `json:"responses"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("anthropictest: cassette %q: %w", name, err)
	}
	out := make([]Response, len(c.Responses))
	for i, body := range c.Responses {
		out[i] = Response{Raw: body}
	}
	return out, nil
}
