package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
)

// TestRandomConversations drives many turns of three people through random
// responses (text, tool rounds with good, failing, panicking and unknown
// tools, odd blocks, API errors), with the tool round limit, the turn cap
// and expiry all coming into play. Every request must pass the fake API's
// validation, and each message's requests must start with the tools and
// system prompt, then the history exactly as stored.
func TestRandomConversations(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))

	tools := []assistant.Tool{
		echoTool("search"),
		echoTool("add_item"),
		funcTool{name: "flaky", run: func(context.Context, assistant.Call) (string, error) { return "", errors.New("service unavailable") }},
		funcTool{name: "boom", run: func(context.Context, assistant.Call) (string, error) { panic("boom") }},
		funcTool{name: "quiet", run: func(context.Context, assistant.Call) (string, error) { return "", nil }},
	}
	names := []string{"search", "add_item", "flaky", "boom", "quiet", "missing_tool"}
	e := newEnv(t, &assistant.Options{MaxToolIterations: 3}, tools...)

	e.srv.Respond(func(anthropictest.Request) anthropictest.Response {
		switch p := rng.IntN(100); {
		case p < 4:
			return []anthropictest.Response{anthropictest.InternalError(), anthropictest.Overloaded(), anthropictest.RateLimited()}[rng.IntN(3)]
		case p < 45:
			var calls []anthropictest.Call
			for range 1 + rng.IntN(3) {
				var in any = map[string]any{"query": fmt.Sprint("q", rng.IntN(100))}
				if rng.IntN(20) == 0 {
					in = []int{1} // not an object: answered with an error, stored as {}
				}
				calls = append(calls, anthropictest.Call{Name: names[rng.IntN(len(names))], Input: in})
			}
			text := ""
			if rng.IntN(2) == 0 {
				text = "Let me check <that> & see."
			}
			return anthropictest.ToolUse(text, calls...)
		case p < 50:
			return anthropictest.Response{Content: []json.RawMessage{}} // no content at all
		case p < 55:
			return anthropictest.Response{Content: []json.RawMessage{
				json.RawMessage(`{"type":"thinking","thinking":"hmm","signature":"c2ln"}`),
				json.RawMessage(`{"type":"text","text":" "}`),
				anthropictest.TextBlock("Thought about it."),
			}}
		default:
			return anthropictest.Text(fmt.Sprintf("Answer %d.", rng.IntN(1000)))
		}
	})

	phones := []string{erin, jason, randomStranger}
	var prefix []byte
	var expired, trimmed int // conversations that expired, turns the cap dropped
	for i := range 300 {
		phone := phones[rng.IntN(len(phones))]
		switch p := rng.IntN(100); {
		case p < 5:
			e.clock.Advance(31 * time.Minute)
		case p < 60:
			e.clock.Advance(time.Duration(rng.IntN(600)) * time.Second)
		}
		stored := e.turns(phone) // as the store has it, expired or not
		history := e.history(phone)
		if len(stored) > 0 && len(history) == 0 {
			expired++
			stored = nil
		}
		before := len(e.srv.Requests())
		r, err := e.handle(phone, fmt.Sprintf("message %d", i))
		if r.Text == "" {
			t.Fatalf("message %d: empty reply (err %v)", i, err)
		}
		after := e.turns(phone)
		if len(after) > 10 {
			t.Fatalf("message %d: %d turns stored", i, len(after))
		}
		if len(stored) == 10 && len(after) == 10 && !after[0].Messages[0].Equal(stored[0].Messages[0]) {
			if !after[0].Messages[0].Equal(stored[1].Messages[0]) {
				t.Fatalf("message %d: the cap dropped more than the oldest turn", i)
			}
			trimmed++
		}
		var first []conversation.Message
		for _, req := range e.srv.Requests()[before:] {
			body := req.Body
			at := bytes.Index(body, []byte(`"messages":[`))
			if prefix == nil {
				prefix = body[:at]
			}
			if !bytes.Equal(body[:at], prefix) {
				t.Fatalf("message %d: tools and system changed:\n%s\n%s", i, prefix, body[:at])
			}
			got := sent(t, req)
			if first == nil {
				// The message's first request: the window's history,
				// then the person's message.
				first = got[:len(got)-1]
				if len(first) > len(history) {
					t.Fatalf("message %d: request has %d messages, history %d", i, len(got), len(history))
				}
				// The window is a suffix of the stored history that
				// starts at a turn boundary.
				if !startsTurn(stored, history, len(history)-len(first)) {
					t.Fatalf("message %d: the window starts at message %d of %d, not at a turn", i, len(history)-len(first), len(history))
				}
				assertSameMessages(t, first, history[len(history)-len(first):])
			}
			assertSameMessages(t, got[:len(first)], first)
		}
	}
	if t.Failed() {
		return
	}
	var apiErrors, toolErrors, capped int
	for _, req := range e.srv.Requests() {
		if req.Status != 200 {
			apiErrors++
		}
		if bytes.Contains(req.Body, []byte(`"is_error":true`)) {
			toolErrors++
		}
		if bytes.Contains(req.Body, []byte(`Not run: the limit`)) {
			capped++
		}
	}
	t.Logf("%d requests: %d API errors, %d carrying tool errors, %d carrying a capped turn; %d conversations expired, %d turns dropped by the cap",
		len(e.srv.Requests()), apiErrors, toolErrors, capped, expired, trimmed)
	if apiErrors == 0 || toolErrors == 0 || capped == 0 || expired == 0 || trimmed == 0 {
		t.Errorf("the run did not reach every path")
	}
}

// startsTurn reports whether message at of history, the messages of the
// last turns, opens a turn.
func startsTurn(turns []conversation.Turn, history []conversation.Message, at int) bool {
	suffix := len(history) - at
	for i := len(turns) - 1; i >= 0 && suffix > 0; i-- {
		suffix -= len(turns[i].Messages)
	}
	return suffix == 0
}
