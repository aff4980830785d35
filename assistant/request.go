package assistant

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/mombot/mombot/conversation"
)

// The request body is written here rather than by the SDK's param structs.
// The stored history must reach the API byte for byte: decoding it into the
// SDK's typed blocks would drop what they do not model (thinking
// signatures, citations, server tool blocks), and the SDK's JSON helpers
// (param.SetJSON, option.WithJSONSet) re-encode raw JSON with HTML escaping,
// turning "&" into "\u0026". The SDK still does everything else: the
// transport, the headers, retries with backoff, timeouts and the typed
// *anthropic.Error. option.WithRequestBody hands it the bytes.

// ephemeral is a 5-minute prompt cache breakpoint.
const ephemeral = `{"type":"ephemeral"}`

// renderPrefix returns the request body up to and including the system
// prompt's text block, before the memory's block, if any, and the
// messages ([Assistant.body] writes them). It is computed once,
// so tools and system prompt are the same bytes in every request, which is
// what lets the prompt cache serve them to every person.
//
// The top-level automatic breakpoint, which the API moves to the last
// block of each request, lets a conversation's history be read from the
// cache on its next message; systemTTL, unless empty, puts one on the
// system prompt, covering the tools and the system prompt (shared by all
// conversations). See breakpoints.go.
func renderPrefix(model string, maxTokens int, system string, tools []Tool, systemTTL string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	b.Write(quote(model))
	b.WriteString(`,"max_tokens":`)
	b.WriteString(strconv.Itoa(maxTokens))
	b.WriteString(`,"cache_control":` + ephemeral)
	if len(tools) > 0 {
		b.WriteString(`,"tools":[`)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			b.Write(quote(t.Name()))
			b.WriteString(`,"description":`)
			b.Write(quote(t.Description()))
			b.WriteString(`,"input_schema":`)
			var schema bytes.Buffer
			if err := json.Compact(&schema, t.InputSchema()); err != nil {
				schema.WriteString(`{"type":"object"}`) // NewRegistry checked it
			}
			b.Write(schema.Bytes())
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	b.WriteString(`,"system":[{"type":"text","text":`)
	b.Write(quote(system))
	if systemTTL != "" {
		b.WriteString(`,"cache_control":` + cacheControl(systemTTL))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// body returns the request body for history followed by msgs, with a
// breakpoint of lifetime mark at the end of history unless mark is empty,
// and memory, unless nil, as a second system block (notes.go).
func (a *Assistant) body(history, msgs []conversation.Message, mark string, memory []byte) ([]byte, error) {
	n := len(a.prefix) + len(memory) + 32
	for _, m := range history {
		n += len(m.Content) + 32
	}
	for _, m := range msgs {
		n += len(m.Content) + 32
	}
	b := bytes.NewBuffer(make([]byte, 0, n))
	b.Write(a.prefix)
	if memory != nil {
		b.WriteByte(',')
		b.Write(memory)
	}
	b.WriteString(`],"messages":[`)
	i := 0
	for _, list := range [][]conversation.Message{history, msgs} {
		for _, m := range list {
			if i > 0 {
				b.WriteByte(',')
			}
			i++
			var mb []byte
			var err error
			if mark != "" && i == len(history) {
				mb, err = markLast(m, mark)
			} else {
				mb, err = m.MarshalJSON()
			}
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i-1, err)
			}
			b.Write(mb)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}

// response is what the loop needs of a Messages API response.
type response struct {
	content    json.RawMessage // the "content" array, compacted, otherwise as sent
	stopReason string
	stop       stopDetails
	model      string // the model that answered, as the API names it
	usage      Usage
	requestID  string
	bodyLen    int // the bytes of the request
}

// stopDetails is a response's "stop_details": for a refusal, the policy
// category and an explanation a person may read, either of them null.
type stopDetails struct {
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

// send makes one Messages API call, with a breakpoint of lifetime mark at
// the end of history unless mark is empty, and the memory block unless
// nil.
func (a *Assistant) send(ctx context.Context, history, msgs []conversation.Message, mark string, memory []byte) (response, error) {
	body, err := a.body(history, msgs, mark, memory)
	if err != nil {
		return response{}, fmt.Errorf("render request: %w", err)
	}
	// Model and MaxTokens are set for the SDK's timeout policy only; the
	// body sent is the one above.
	params := anthropic.MessageNewParams{Model: a.model, MaxTokens: int64(a.maxTok)}
	var httpResp *http.Response
	msg, err := a.client.Messages.New(ctx, params,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&httpResp),
		option.WithRequestTimeout(a.reqTimeout),
		option.WithMiddleware(a.capRetryAfter))
	if err != nil {
		return response{}, err
	}
	var r struct {
		Content     json.RawMessage `json:"content"`
		StopReason  string          `json:"stop_reason"`
		StopDetails *stopDetails    `json:"stop_details"`
		Model       string          `json:"model"`
		Usage       Usage           `json:"usage"`
	}
	if err := json.Unmarshal([]byte(msg.RawJSON()), &r); err != nil {
		return response{}, fmt.Errorf("decode response: %w", err)
	}
	var content bytes.Buffer
	if len(r.Content) > 0 {
		if err := json.Compact(&content, r.Content); err != nil {
			return response{}, fmt.Errorf("decode response content: %w", err)
		}
	}
	out := response{content: content.Bytes(), stopReason: r.StopReason, model: r.Model, usage: r.Usage, bodyLen: len(body)}
	if r.StopDetails != nil {
		out.stop = *r.StopDetails
	}
	if out.model == "" {
		out.model = a.model
	}
	out.usage.Calls = 1
	if httpResp != nil {
		out.requestID = httpResp.Header.Get("request-id")
	}
	return out, nil
}

// Usage is the token usage of the API calls made for one message, the sum
// of each response's usage. It is stored on the turn as its "usage" key.
//
// The API reports the tokens written to the prompt cache in total
// (cache_creation_input_tokens) and by lifetime (cache_creation:
// ephemeral_5m_input_tokens, ephemeral_1h_input_tokens), since the two
// lifetimes are billed differently (see the Messages API's usage object,
// and anthropic.Usage and anthropic.CacheCreation in the SDK). Usage keeps
// both; the split is stored under "cache_creation" as the API writes it,
// next to the keys stored before it existed, which keep their names. A
// response or a stored turn without the split (written before it existed,
// or by a stand-in that leaves it out) counts all its cache writes as
// 5-minute ones, the lifetime of a breakpoint that names none.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	// CacheCreation splits CacheCreationInputTokens by cache lifetime.
	CacheCreation CacheCreation `json:"cache_creation"`
	// Calls is the number of API calls that returned a message.
	Calls int `json:"api_calls"`
}

// CacheCreation is the tokens written to the prompt cache, by the lifetime
// of the entry written.
type CacheCreation struct {
	Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
}

// UnmarshalJSON reads a usage object of a response or of a stored turn.
// Without "cache_creation" every cache write counts as a 5-minute one.
func (u *Usage) UnmarshalJSON(data []byte) error {
	type plain Usage // without this method
	var v struct {
		plain
		CacheCreation *CacheCreation `json:"cache_creation"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*u = Usage(v.plain)
	if v.CacheCreation != nil {
		u.CacheCreation = *v.CacheCreation
	} else {
		u.CacheCreation = CacheCreation{Ephemeral5mInputTokens: u.CacheCreationInputTokens}
	}
	return nil
}

func (u *Usage) add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	u.CacheCreation.Ephemeral5mInputTokens += o.CacheCreation.Ephemeral5mInputTokens
	u.CacheCreation.Ephemeral1hInputTokens += o.CacheCreation.Ephemeral1hInputTokens
	u.Calls += o.Calls
}

// quote returns s as a JSON string without HTML escaping, the way package
// conversation writes stored text.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
