package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
)

// Response is a scripted answer of the fake: a message, or an error when
// Error is set.
type Response struct {
	// Content is the message's content blocks, as JSON, sent as they are.
	Content []json.RawMessage
	// StopReason is the message's stop_reason; empty means "tool_use" if
	// Content has a tool_use block and "end_turn" otherwise.
	StopReason string
	// Usage is the message's usage; nil means the fake's estimate, which
	// models the prompt cache (see the package documentation).
	Usage *Usage
	// Error, when set, makes the response an API error.
	Error *Error
	// Header holds extra response headers, such as retry-after.
	Header http.Header
	// StopDetails is the message's stop_details, as JSON; nil means null.
	StopDetails json.RawMessage
	// Raw, when set, is sent as the whole response body, as it is: a
	// recorded response of the real API (see [Cassette]). Content,
	// StopReason, StopDetails and Usage are then ignored.
	Raw json.RawMessage
	// Hang makes the fake never answer the request: it waits until the
	// client gives up (a timeout, a cancelled context) or the server
	// closes.
	Hang bool
}

// Usage is the usage object of a response.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	// CacheCreation splits CacheCreationInputTokens by the lifetime of
	// the entries written; nil leaves it out of the response.
	CacheCreation *CacheCreation `json:"cache_creation,omitempty"`
}

// CacheCreation is the usage's split of the tokens written to the cache.
type CacheCreation struct {
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
}

// Error is an API error response.
type Error struct {
	Status  int
	Type    string // e.g. "rate_limit_error"
	Message string
}

// Call is a tool call in a scripted response. An empty ID is filled in with
// a fresh unique id.
type Call struct {
	ID    string
	Name  string
	Input any // encoded with encoding/json; nil means {}
}

// Text returns a response whose content is one text block.
func Text(text string) Response {
	return Response{Content: []json.RawMessage{TextBlock(text)}}
}

// ToolUse returns a response that calls tools, after text if it is not
// empty, with stop_reason "tool_use".
func ToolUse(text string, calls ...Call) Response {
	var r Response
	if text != "" {
		r.Content = append(r.Content, TextBlock(text))
	}
	for _, c := range calls {
		id := c.ID
		if id == "" {
			id = newToolID()
		}
		in := c.Input
		if in == nil {
			in = map[string]any{}
		}
		r.Content = append(r.Content, marshal(struct {
			Type  string `json:"type"`
			ID    string `json:"id"`
			Name  string `json:"name"`
			Input any    `json:"input"`
		}{"tool_use", id, c.Name, in}))
	}
	return r
}

// TextBlock returns a text content block.
func TextBlock(text string) json.RawMessage {
	return marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
}

// Fail returns an error response.
func Fail(status int, errType, message string) Response {
	return Response{Error: &Error{Status: status, Type: errType, Message: message}}
}

// RateLimited returns the API's 429 rate_limit_error.
func RateLimited() Response {
	return Fail(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.")
}

// Overloaded returns the API's 529 overloaded_error.
func Overloaded() Response {
	return Fail(529, "overloaded_error", "Overloaded")
}

// InternalError returns the API's 500 api_error.
func InternalError() Response {
	return Fail(http.StatusInternalServerError, "api_error", "Internal server error")
}

// toolIDs numbers tool calls across servers, since a history may outlive
// the server that made it.
var toolIDs atomic.Int64

func newToolID() string {
	return fmt.Sprintf("toolu_fake%08d", toolIDs.Add(1))
}

func (r Response) render(reqID, model, msgID string) (int, []byte) {
	if r.Error != nil {
		return r.Error.Status, errorBody(r.Error.Type, r.Error.Message, reqID)
	}
	if r.Raw != nil {
		return http.StatusOK, r.Raw
	}
	details := r.StopDetails
	if details == nil {
		details = json.RawMessage("null")
	}
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		for _, b := range r.Content {
			var f struct{ Type string }
			if json.Unmarshal(b, &f) == nil && f.Type == "tool_use" {
				stop = "tool_use"
			}
		}
	}
	var usage Usage
	if r.Usage != nil {
		usage = *r.Usage
	}
	content := r.Content
	if content == nil {
		content = []json.RawMessage{}
	}
	return http.StatusOK, marshal(map[string]any{
		"id":            msgID,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_details":  details,
		"stop_sequence": nil,
		"usage":         usage,
	})
}

func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("anthropictest: %v", err)) // test values always encode
	}
	return bytes.TrimSpace(b.Bytes())
}
