package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/phone"
)

const (
	erin           = "+14155551234"
	jason          = "+14155555678"
	stranger       = "+447700900123" // not in the family
	randomStranger = "+15551230000"  // not in the family, in TestRandomConversations
)

// testPhones are all the phones the tests use; none may be in a log.
var testPhones = []string{erin, jason, stranger, randomStranger}

// unmasked matches a phone number in a log: "+" and digits. Masked numbers
// have their digits starred.
var unmasked = regexp.MustCompile(`\+\d{5,}`)

// checkLog fails t if log holds the API key or a phone number in clear.
func checkLog(t testing.TB, log string) {
	t.Helper()
	if strings.Contains(log, anthropictest.APIKey) {
		t.Errorf("the API key is in the log")
	}
	for _, p := range testPhones {
		if strings.Contains(log, p) || strings.Contains(log, p[1:]) {
			t.Errorf("the phone %s is in the log unmasked", phone.Mask(p))
		}
	}
	if m := unmasked.FindString(log); m != "" {
		t.Errorf("a phone number is in the log unmasked: %s", phone.Mask(m))
	}
}

var pacific = mustLoad("America/Los_Angeles")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.FixedZone("PST", -8*3600)
	}
	return loc
}

// env is an assistant wired to a fake API, an in-memory store and a fake
// clock, with its log captured.
type env struct {
	t     testing.TB
	srv   *anthropictest.Server
	mem   *conversation.Memory
	a     *assistant.Assistant
	clock *storetest.Clock
	logs  *syncBuffer
	// allowRejected, unless empty, is a refusal the test provokes.
	allowRejected string
}

// syncBuffer is a log the test reads while the code under test writes it.
type syncBuffer = logtest.Buffer

func newEnv(t testing.TB, opts *assistant.Options, tools ...assistant.Tool) *env {
	t.Helper()
	e := &env{t: t, srv: anthropictest.NewServer(t), clock: storetest.NewClock(time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC)), logs: &syncBuffer{}}
	mem, err := conversation.New(memstore.New(), &conversation.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.mem = mem
	e.srv.SetNow(e.clock.Now)
	var o assistant.Options
	if opts != nil {
		o = *opts
	}
	if o.Family == nil {
		o.Family = map[string]assistant.Person{
			erin:  {Name: "Erin", Location: pacific},
			jason: {Name: "Jason", Location: pacific},
		}
	}
	if len(tools) > 0 {
		reg, err := assistant.NewRegistry(tools...)
		if err != nil {
			t.Fatal(err)
		}
		o.Tools = reg
	}
	o.Now = e.clock.Now
	o.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.a, err = assistant.New(e.srv.Client(), mem, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if testing.Verbose() && t.Failed() {
			t.Logf("log:\n%s", e.logs.String())
		}
		for _, r := range e.srv.Rejected() {
			if e.allowRejected == "" || !strings.Contains(r, e.allowRejected) {
				t.Errorf("the fake API rejected a request: %s", r)
			}
		}
		checkLog(t, e.logs.String())
	})
	return e
}

func (e *env) handle(from, text string) (assistant.Reply, error) {
	e.t.Helper()
	return e.a.Handle(context.Background(), assistant.Inbound{From: from, Text: text})
}

func (e *env) mustHandle(from, text string) assistant.Reply {
	e.t.Helper()
	r, err := e.handle(from, text)
	if err != nil {
		e.t.Fatalf("Handle(%q): %v", text, err)
	}
	return r
}

func (e *env) history(phone string) []conversation.Message {
	e.t.Helper()
	h, err := e.mem.History(context.Background(), phone)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) turns(phone string) []conversation.Turn {
	e.t.Helper()
	c, err := e.mem.Load(context.Background(), phone)
	if err != nil {
		return nil
	}
	return c.Turns
}

// lastRequest returns the last request the fake received.
func (e *env) lastRequest() anthropictest.Request {
	e.t.Helper()
	reqs := e.srv.Requests()
	if len(reqs) == 0 {
		e.t.Fatal("no request was sent")
	}
	return reqs[len(reqs)-1]
}

// sent returns the messages of a request as conversation messages, bytes
// as sent.
func sent(t testing.TB, r anthropictest.Request) []conversation.Message {
	t.Helper()
	out := make([]conversation.Message, len(r.Params.Messages))
	for i, raw := range r.Params.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out[i] = conversation.Message{Role: m.Role, Content: unmark(m.Content)}
	}
	return out
}

// unmark returns content without the cache_control the assistant puts on
// the last block of the history it sends.
func unmark(content json.RawMessage) json.RawMessage {
	for _, cc := range []string{`,"cache_control":{"type":"ephemeral"}`, `,"cache_control":{"type":"ephemeral","ttl":"1h"}`} {
		content = bytes.Replace(content, []byte(cc), nil, 1)
	}
	return content
}

func assertSameMessages(t testing.TB, got, want []conversation.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\ngot  %s\nwant %s", len(got), len(want), dump(got), dump(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) && !asBlocks(got[i]).Equal(asBlocks(want[i])) {
			t.Fatalf("message %d differs:\ngot  %s %s\nwant %s %s", i, got[i].Role, got[i].Content, want[i].Role, want[i].Content)
		}
	}
}

// asBlocks returns m with a string content as the one text block it
// stands for, which is the same prompt.
func asBlocks(m conversation.Message) conversation.Message {
	if !m.IsString() {
		return m
	}
	var text string
	_ = json.Unmarshal(m.Content, &text)
	return conversation.NewMessage(m.Role, conversation.TextBlock(text))
}

func dump(msgs []conversation.Message) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

// funcTool is a tool for tests.
type funcTool struct {
	name   string
	schema string
	run    func(context.Context, assistant.Call) (string, error)
}

func (f funcTool) Name() string        { return f.name }
func (f funcTool) Description() string { return "Test tool " + f.name + "." }
func (f funcTool) InputSchema() json.RawMessage {
	if f.schema == "" {
		return json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)
	}
	return json.RawMessage(f.schema)
}
func (f funcTool) Run(ctx context.Context, c assistant.Call) (string, error) { return f.run(ctx, c) }

func echoTool(name string) funcTool {
	return funcTool{name: name, run: func(_ context.Context, c assistant.Call) (string, error) {
		return name + " result for " + string(c.Input), nil
	}}
}

// toolResult is a decoded tool_result block.
type toolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

func toolResults(t testing.TB, m conversation.Message) []toolResult {
	t.Helper()
	var out []toolResult
	if err := json.Unmarshal(m.Content, &out); err != nil {
		t.Fatalf("not tool results: %s", m.Content)
	}
	return out
}
