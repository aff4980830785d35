package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
)

func TestTextReply(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.SetCacheMinimum(0)
	e.srv.Enqueue(anthropictest.Text("Tacos tonight!"))

	r := e.mustHandle(erin, "what's for dinner?")
	if r.Text != "Tacos tonight!" {
		t.Errorf("reply = %q", r.Text)
	}
	req := e.lastRequest()
	if got := req.Header.Get("X-Api-Key"); got != anthropictest.APIKey {
		t.Errorf("x-api-key = %q", got)
	}
	if req.Params.Model != assistant.DefaultModel || req.Params.MaxTokens != assistant.DefaultMaxTokens {
		t.Errorf("model, max_tokens = %q, %d", req.Params.Model, req.Params.MaxTokens)
	}
	if string(req.Params.CacheControl) != `{"type":"ephemeral"}` {
		t.Errorf("top-level cache_control = %s", req.Params.CacheControl)
	}
	// The built-in prompt and no tools are under the model's minimum
	// cacheable length: a breakpoint on them would be wasted.
	if bytes.Contains(req.Params.System, []byte(`"cache_control"`)) {
		t.Errorf("the system prompt has a breakpoint that can never cache: %s", req.Params.System)
	}
	// 18:35 UTC is 10:35 in California; the time is in the message.
	want := []conversation.Message{conversation.UserText("[Tue 24 Feb 2026 10:35 PST] [From Erin]: what's for dinner?")}
	assertSameMessages(t, sent(t, req), want)
	if bytes.Contains(req.Params.System, []byte("24 Feb")) {
		t.Errorf("the system prompt holds the date")
	}

	turns := e.turns(erin)
	if len(turns) != 1 || len(turns[0].Messages) != 2 || !r.Stored {
		t.Fatalf("stored %d turns (Reply.Stored %v): %+v", len(turns), r.Stored, turns)
	}
	var u assistant.Usage
	if err := json.Unmarshal(turns[0].Extra["usage"], &u); err != nil || u.Calls != 1 || u.OutputTokens == 0 {
		t.Errorf("stored usage = %s (%v)", turns[0].Extra["usage"], err)
	}
	// The first request reads nothing from the cache and, asking for
	// caching, writes all of it (the fake's minimum is 0 here).
	if u.CacheCreationInputTokens == 0 || u.InputTokens != 0 || u.CacheReadInputTokens != 0 {
		t.Errorf("usage %+v of a first request of %d bytes: want it all written to the cache", u, len(req.Body))
	}
	if r.Usage != u {
		t.Errorf("reply usage %+v, stored %+v", r.Usage, u)
	}
	for _, k := range []string{"input_tokens=", "output_tokens=", "cache_creation_input_tokens=", "cache_read_input_tokens=", "phone=+*******1234"} {
		if !strings.Contains(e.logs.String(), k) {
			t.Errorf("log lacks %s:\n%s", k, e.logs.String())
		}
	}
}

// A follow-up sends the stored history byte for byte, blocks the SDK does
// not model included, and the request keeps the previous one as its prefix.
func TestFollowUpSendsStoredBytes(t *testing.T) {
	e := newEnv(t, nil, echoTool("search"))
	e.srv.SetCacheMinimum(0)
	odd := anthropictest.Response{Content: []json.RawMessage{
		json.RawMessage(`{"type":"thinking","thinking":"Erin wants <quick> & cheap","signature":"c2lnbmF0dXJl"}`),
		json.RawMessage(`{"type":"text","text":"1. Tacos & <salsa>\n2. Soup","citations":[{"type":"char_location","cited_text":"Tacos","document_index":0,"document_title":"Recipes","start_char_index":0,"end_char_index":5}]}`),
		json.RawMessage(`{"type":"text","text":"  "}`),
	}}
	e.srv.Enqueue(odd, anthropictest.Text("Soup it is."))

	firstUsage := e.mustHandle(erin, "ideas for dinner? <cheap> & quick").Usage
	first := e.lastRequest()
	stored := e.history(erin)
	if len(stored) != 2 {
		t.Fatalf("stored %d messages", len(stored))
	}
	wantContent := `[{"type":"thinking","thinking":"Erin wants <quick> & cheap","signature":"c2lnbmF0dXJl"},{"type":"text","text":"1. Tacos & <salsa>\n2. Soup","citations":[{"type":"char_location","cited_text":"Tacos","document_index":0,"document_title":"Recipes","start_char_index":0,"end_char_index":5}]}]`
	if string(stored[1].Content) != wantContent {
		t.Errorf("stored assistant content:\n got %s\nwant %s", stored[1].Content, wantContent)
	}

	e.clock.Advance(2 * time.Minute)
	r := e.mustHandle(erin, "tell me more about number 2")
	if r.Text != "Soup it is." {
		t.Errorf("reply = %q", r.Text)
	}
	// The breakpoint at the end of the conversation let the whole first
	// request be read from the cache.
	if got, want := r.Usage.CacheReadInputTokens, firstUsage.CacheCreationInputTokens; got < want {
		t.Errorf("the follow-up read %d tokens from the cache, want at least %d (the first request)", got, want)
	}
	second := e.lastRequest()
	got := sent(t, second)
	assertSameMessages(t, got[:2], stored)
	// Everything up to the end of the first request's messages is the
	// same bytes, so the cache can serve it.
	firstBody := first.Body[:len(first.Body)-len("]}")]
	if !bytes.HasPrefix(second.Body, firstBody) {
		t.Errorf("the second request does not start with the first:\n1: %s\n2: %s", first.Body, second.Body)
	}
	if !bytes.Contains(second.Body, []byte(`Tacos & <salsa>`)) {
		t.Errorf("history text was escaped: %s", second.Body)
	}
}

func TestToolRound(t *testing.T) {
	var calls []assistant.Call
	tool := funcTool{name: "search", run: func(_ context.Context, c assistant.Call) (string, error) {
		calls = append(calls, c)
		return "Found 2 recipes: 1. Chicken tacos 2. Chicken soup", nil
	}}
	e := newEnv(t, nil, tool)
	e.srv.Enqueue(
		anthropictest.ToolUse("Let me look.", anthropictest.Call{Name: "search", Input: map[string]string{"query": "chicken"}}),
		anthropictest.Text("I found chicken tacos and chicken soup."),
	)
	r := e.mustHandle(erin, "find me a chicken dinner")
	if r.Text != "I found chicken tacos and chicken soup." || r.ToolRounds != 1 || r.Usage.Calls != 2 {
		t.Errorf("reply = %+v", r)
	}
	if len(calls) != 1 || string(calls[0].Input) != `{"query":"chicken"}` || calls[0].Person.Name != "Erin" || calls[0].Phone != erin {
		t.Fatalf("tool calls = %+v", calls)
	}
	req := e.lastRequest()
	msgs := sent(t, req)
	if len(msgs) != 3 {
		t.Fatalf("second request has %d messages", len(msgs))
	}
	res := toolResults(t, msgs[2])
	if len(res) != 1 || res[0].IsError || !strings.HasPrefix(res[0].Content, "Found 2 recipes") {
		t.Errorf("tool results = %+v", res)
	}
	assertSameMessages(t, e.history(erin), append(msgs, conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("I found chicken tacos and chicken soup."))))
	if !bytes.Contains(req.Params.Tools, []byte(`"name":"search"`)) {
		t.Errorf("tools = %s", req.Params.Tools)
	}
}

func TestToolFailuresBecomeErrorResults(t *testing.T) {
	strict := funcTool{name: "add", schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
		run: func(_ context.Context, c assistant.Call) (string, error) {
			var in struct{ N int }
			if err := c.DecodeInput(&in); err != nil {
				return "", err
			}
			return "ok", nil
		}}
	failing := funcTool{name: "fail", run: func(context.Context, assistant.Call) (string, error) {
		return "", errors.New("the list service is down")
	}}
	panicking := funcTool{name: "boom", run: func(context.Context, assistant.Call) (string, error) {
		panic("nil map")
	}}
	tests := []struct {
		name    string
		call    anthropictest.Call
		content string
	}{
		{"error", anthropictest.Call{Name: "fail"}, "the list service is down"},
		{"panic", anthropictest.Call{Name: "boom"}, "the tool failed unexpectedly"},
		{"malformed input", anthropictest.Call{Name: "add", Input: map[string]any{"n": "two"}}, "invalid input"},
		{"unknown field", anthropictest.Call{Name: "add", Input: map[string]any{"m": 2}}, "invalid input"},
		{"unknown tool", anthropictest.Call{Name: "teleport"}, `There is no tool named "teleport".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, strict, failing, panicking)
			e.srv.Enqueue(anthropictest.ToolUse("", tt.call), anthropictest.Text("Sorry, that did not work."))
			r := e.mustHandle(erin, "do it")
			if r.Text != "Sorry, that did not work." {
				t.Errorf("reply = %q", r.Text)
			}
			msgs := sent(t, e.lastRequest())
			res := toolResults(t, msgs[len(msgs)-1])
			if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, tt.content) {
				t.Errorf("tool result = %+v, want an error containing %q", res, tt.content)
			}
			if len(e.turns(erin)) != 1 {
				t.Errorf("the turn was not stored")
			}
		})
	}
}

// A tool_use whose input is not a JSON object is not run, is answered with
// an error, and is stored and sent back with the input {}: the API refuses
// any other input in a request, so keeping it would make every later
// message of the conversation fail.
func TestToolUseInputNotAnObject(t *testing.T) {
	ran := 0
	tool := funcTool{name: "search", run: func(context.Context, assistant.Call) (string, error) {
		ran++
		return "found", nil
	}}
	e := newEnv(t, nil, tool)
	bad := anthropictest.ToolUse("Searching.", anthropictest.Call{ID: "toolu_list_input", Name: "search", Input: []int{1}})
	e.srv.Enqueue(bad, anthropictest.Text("Sorry, I fumbled that."), anthropictest.Text("Still here."))
	if r := e.mustHandle(erin, "find tacos"); r.Text != "Sorry, I fumbled that." {
		t.Errorf("reply = %q", r.Text)
	}
	if ran != 0 {
		t.Errorf("the tool ran %d times on a non-object input", ran)
	}
	msgs := sent(t, e.lastRequest())
	if len(msgs) != 3 {
		t.Fatalf("the request after the tool round has %d messages, want 3", len(msgs))
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(msgs[1].Content, &blocks); err != nil || len(blocks) != 2 {
		t.Fatalf("assistant message %s (%v)", msgs[1].Content, err)
	}
	if use := blocks[1]; string(use["type"]) != `"tool_use"` || string(use["id"]) != `"toolu_list_input"` || string(use["name"]) != `"search"` || string(use["input"]) != `{}` {
		t.Errorf("the tool_use block was sent back as %s, want its input {}", msgs[1].Content)
	}
	res := toolResults(t, msgs[2])
	if len(res) != 1 || res[0].ToolUseID != "toolu_list_input" || !res[0].IsError || !strings.Contains(res[0].Content, "JSON object") {
		t.Errorf("tool results = %+v, want an error for toolu_list_input", res)
	}
	h := e.history(erin)
	if err := conversation.ValidateTurn(h); err != nil {
		t.Errorf("stored turn: %v", err)
	}
	assertSameMessages(t, h[:3], msgs)
	// The next message carries the turn, and the API accepts it.
	e.mustHandle(erin, "again?")
}

func TestToolRoundLimit(t *testing.T) {
	runs := 0
	tool := funcTool{name: "search", run: func(context.Context, assistant.Call) (string, error) {
		runs++
		return "nothing yet", nil
	}}
	e := newEnv(t, &assistant.Options{MaxToolIterations: 2}, tool)
	for range 3 {
		e.srv.Enqueue(anthropictest.ToolUse("Still looking.", anthropictest.Call{Name: "search"}))
	}
	r, err := e.handle(erin, "find everything")
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || len(e.srv.Requests()) != 3 || r.ToolRounds != 2 {
		t.Errorf("ran %d tools in %d requests, rounds %d; want 2 in 3", runs, len(e.srv.Requests()), r.ToolRounds)
	}
	if !strings.Contains(r.Text, "more than 2 steps") {
		t.Errorf("reply = %q", r.Text)
	}
	h := e.history(erin)
	if len(h) != 7 {
		t.Fatalf("stored %d messages, want 7", len(h))
	}
	last := toolResults(t, h[6])
	if !last[0].IsError || !strings.Contains(last[0].Content, "Not run") {
		t.Errorf("the unrun call was answered with %+v", last)
	}
	// The next message goes out with the capped turn and is accepted.
	e.srv.Enqueue(anthropictest.Text("Here is what I have."))
	e.mustHandle(erin, "ok, what did you find?")
}

func TestAPIFailure(t *testing.T) {
	tests := []struct {
		name string
		resp anthropictest.Response
		code int
		want string // what the person reads
	}{
		{"rate limited", anthropictest.RateLimited(), http.StatusTooManyRequests, apology.RateLimited},
		{"server error", anthropictest.InternalError(), http.StatusInternalServerError, apology.Unavailable},
		{"overloaded", anthropictest.Overloaded(), 529, apology.Overloaded},
		{"prompt too long", anthropictest.PromptTooLong(210000, 200000), http.StatusBadRequest, apology.PromptTooLong},
		{"request too large", anthropictest.RequestTooLarge(), http.StatusRequestEntityTooLarge, apology.PromptTooLong},
		{"invalid request", anthropictest.Fail(http.StatusBadRequest, "invalid_request_error", "messages.0.content: Field required"), http.StatusBadRequest, apology.Internal},
		{"authentication", anthropictest.Fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key"), http.StatusUnauthorized, apology.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.srv.Enqueue(tt.resp)
			r, err := e.handle(erin, "hello")
			if r.Text != tt.want || assistant.ErrorMessage(err) != tt.want {
				t.Errorf("reply = %q, ErrorMessage(err) = %q; want %q", r.Text, assistant.ErrorMessage(err), tt.want)
			}
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.code {
				t.Fatalf("err = %v, want an *anthropic.Error with status %d", err, tt.code)
			}
			if e.turns(erin) != nil || r.Stored {
				t.Errorf("a failed first call stored a turn, or says so (Reply.Stored %v)", r.Stored)
			}
			log := e.logs.String()
			for _, k := range []string{"status=" + strconv.Itoa(tt.code), "request_id=req_fake_", "error_type=" + tt.resp.Error.Type} {
				if !strings.Contains(log, k) {
					t.Errorf("log lacks %q:\n%s", k, log)
				}
			}
		})
	}
}

// After a tool round, a failed call saves the partial turn, which ends with
// the tool results; the next message sends it and is accepted.
func TestAPIFailureAfterToolRound(t *testing.T) {
	e := newEnv(t, nil, echoTool("add_item"))
	e.srv.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "add_item", Input: map[string]string{"query": "milk"}}),
		anthropictest.Overloaded(),
	)
	r, err := e.handle(erin, "add milk")
	if want := apology.Overloaded + " Some of what you asked may already be done; ask me what's left."; err == nil || r.Text != want {
		t.Fatalf("reply %q, err %v; want %q", r.Text, err, want)
	}
	h := e.history(erin)
	if len(h) != 3 || h[2].Role != conversation.RoleUser || toolResults(t, h[2])[0].IsError || !r.Stored {
		t.Fatalf("partial turn (Reply.Stored %v) = %s", r.Stored, dump(h))
	}
	e.srv.Enqueue(anthropictest.Text("Milk is on the list."))
	e.mustHandle(erin, "did it work?")
	assertSameMessages(t, sent(t, e.lastRequest())[:3], h)
}

// The SDK retries what the API says may be retried.
func TestRetry(t *testing.T) {
	e := newEnv(t, nil)
	a, err := assistant.New(e.srv.Client(optionRetries(2)), e.mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	limited := anthropictest.RateLimited()
	limited.Header = http.Header{"Retry-After-Ms": {"1"}}
	e.srv.Enqueue(limited, anthropictest.Text("Hi!"))
	r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hi"})
	if err != nil || r.Text != "Hi!" {
		t.Fatalf("reply %q, err %v", r.Text, err)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestSystemSender(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("Reminder sent."), anthropictest.Text("Another."))
	e.mustHandle(conversation.SystemSender, "daily reminder")
	e.mustHandle(conversation.SystemSender, "daily reminder again")
	msgs := sent(t, e.lastRequest())
	if n := len(msgs); n != 1 {
		t.Errorf("the system sender got history: %d messages", n)
	}
	// The sender is named, not masked like a stranger's number.
	if got, want := string(msgs[0].Content), `"[Tue 24 Feb 2026 18:35 UTC] [From system]: daily reminder again"`; got != want {
		t.Errorf("system message = %s, want %s", got, want)
	}
	sums, _ := e.mem.List(context.Background())
	if len(sums) != 0 {
		t.Errorf("stored %+v", sums)
	}
}

func TestExpiryAndIsolation(t *testing.T) {
	// A family prompt long enough to be cached on its own.
	e := newEnv(t, &assistant.Options{SystemPrompt: assistant.DefaultSystemPrompt + strings.Repeat("\nThe family's recipes: tacos, soup, lasagne.", 120)})
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
	erinFirst := e.mustHandle(erin, "one").Usage
	r := e.mustHandle(jason, "two")
	if n := len(sent(t, e.lastRequest())); n != 1 {
		t.Errorf("Jason's first message went out with %d messages", n)
	}
	// The tools and system prompt, cached for Erin, are read for Jason,
	// and only they.
	if got, max := r.Usage.CacheReadInputTokens, erinFirst.CacheCreationInputTokens; got == 0 || got >= max {
		t.Errorf("Jason's first message read %d tokens from the cache, want some, less than Erin's first request (%d)", got, max)
	}
	e.clock.Advance(29 * time.Minute)
	e.mustHandle(erin, "three")
	if n := len(sent(t, e.lastRequest())); n != 3 {
		t.Errorf("Erin's follow-up went out with %d messages, want 3", n)
	}
	e.clock.Advance(31 * time.Minute)
	e.mustHandle(erin, "four")
	if n := len(sent(t, e.lastRequest())); n != 1 {
		t.Errorf("after expiry the message went out with %d messages, want 1", n)
	}
}

// A stranger is called by their masked number in the message, but tools
// get the person as configured: no name, so that nothing records a masked
// number as someone's name.
func TestUnknownSender(t *testing.T) {
	var calls []assistant.Call
	who := funcTool{name: "who", run: func(_ context.Context, c assistant.Call) (string, error) {
		calls = append(calls, c)
		return "noted", nil
	}}
	e := newEnv(t, nil, who)
	e.srv.Enqueue(anthropictest.ToolUse("", anthropictest.Call{Name: "who"}), anthropictest.Text("Hello!"),
		anthropictest.ToolUse("", anthropictest.Call{Name: "who"}), anthropictest.Text("Hello Erin!"))
	e.mustHandle(stranger, "hi")
	if got := string(sent(t, e.lastRequest())[0].Content); !strings.Contains(got, "[From +********0123]: hi") || !strings.Contains(got, "UTC") {
		t.Errorf("message = %s", got)
	}
	e.mustHandle(erin, "hi")
	if len(calls) != 2 {
		t.Fatalf("%d tool calls, want 2", len(calls))
	}
	if p := calls[0].Person; p.Name != "" || p.Location != time.UTC || calls[0].Phone != stranger {
		t.Errorf("the stranger's call has Person %+v, phone %q; want no name, UTC", p, calls[0].Phone)
	}
	if p := calls[1].Person; p.Name != "Erin" || p.Location != pacific {
		t.Errorf("Erin's call has Person %+v", p)
	}
}

func TestEmptyMessage(t *testing.T) {
	e := newEnv(t, nil)
	r, err := e.handle(erin, "  \n ")
	if !errors.Is(err, assistant.ErrEmptyMessage) || r.Text != assistant.ReplyEmpty {
		t.Errorf("reply %q, err %v", r.Text, err)
	}
	if len(e.srv.Requests()) != 0 {
		t.Errorf("an empty message was sent")
	}
}

// The time in front of a message is when it was sent, when the caller
// knows it (a WhatsApp message handled late, a redelivery), in the
// sender's time zone; without it, the time it is handled.
func TestMessageTime(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("Morning!"), anthropictest.Text("Evening!"))
	sentAt := time.Date(2026, 2, 24, 16, 5, 0, 0, time.FixedZone("CET", 3600)) // 15:05 UTC, 07:05 in California
	if _, err := e.a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "good morning", Time: sentAt}); err != nil {
		t.Fatal(err)
	}
	e.mustHandle(erin, "good evening")
	msgs := sent(t, e.lastRequest())
	want := []conversation.Message{
		conversation.UserText("[Tue 24 Feb 2026 07:05 PST] [From Erin]: good morning"),
		conversation.NewMessage(conversation.RoleAssistant, anthropictest.TextBlock("Morning!")),
		conversation.UserText("[Tue 24 Feb 2026 10:35 PST] [From Erin]: good evening"),
	}
	assertSameMessages(t, msgs, want)
}
