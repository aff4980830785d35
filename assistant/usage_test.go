package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// The stored "usage" key keeps the names it had before the cache-write split
// existed, so old turns still read; the split is added under
// "cache_creation", and a usage without it counts its writes as 5-minute
// ones.
func TestUsageJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     assistant.Usage
	}{
		{
			name: "a turn stored before the split: all writes are 5-minute ones",
			in:   `{"input_tokens":10,"output_tokens":20,"cache_creation_input_tokens":300,"cache_read_input_tokens":40,"api_calls":2}`,
			want: assistant.Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 300, CacheReadInputTokens: 40, Calls: 2,
				CacheCreation: assistant.CacheCreation{Ephemeral5mInputTokens: 300}},
		},
		{
			name: "the API's split is kept as reported",
			in:   `{"input_tokens":10,"output_tokens":20,"cache_creation_input_tokens":300,"cache_read_input_tokens":40,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200}}`,
			want: assistant.Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 300, CacheReadInputTokens: 40,
				CacheCreation: assistant.CacheCreation{Ephemeral5mInputTokens: 100, Ephemeral1hInputTokens: 200}},
		},
		{
			name: "a split of zeros is a split: nothing was written",
			in:   `{"input_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}`,
			want: assistant.Usage{InputTokens: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got assistant.Usage
			if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			// What is written reads back the same, and keeps the old keys.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back assistant.Usage
			if err := json.Unmarshal(b, &back); err != nil || back != got {
				t.Fatalf("round trip of %s = %+v, %v", b, back, err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(b, &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "api_calls", "cache_creation"} {
				if _, ok := keys[k]; !ok {
					t.Errorf("stored usage %s lacks %q", b, k)
				}
			}
		})
	}
	if err := json.Unmarshal([]byte(`{"input_tokens":"ten"}`), new(assistant.Usage)); err == nil {
		t.Error("a usage with a string count decoded without error")
	}
}

// ledgerOf returns what the env's store holds in its usage ledger.
func ledgerOf(t *testing.T, e *env) []conversation.DailyUsage {
	t.Helper()
	got, err := e.mem.UsageSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Each message's usage goes to the ledger of the store's, per person and
// day, whether the message was answered (with tool rounds: every call
// counts) or failed after some calls had been billed; a message whose
// first call failed adds nothing, since nothing was billed.
func TestUsageRecorded(t *testing.T) {
	e := newEnv(t, nil, echoTool("add_item"))
	e.srv.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "add_item", Input: map[string]string{"item": "milk"}}),
		anthropictest.Text("Added milk."),
	)
	r1 := e.mustHandle(erin, "add milk")
	e.srv.Enqueue(anthropictest.Text("Hi Jason."))
	r2 := e.mustHandle(jason, "hello")
	e.srv.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "add_item", Input: map[string]string{"item": "eggs"}}),
		anthropictest.Overloaded(),
	)
	r3, err := e.handle(erin, "add eggs")
	if err == nil || r3.Usage.Calls != 1 {
		t.Fatalf("a failure after a tool round: err %v, usage %+v", err, r3.Usage)
	}
	e.srv.Enqueue(anthropictest.Overloaded())
	if _, err := e.handle(erin, "anyone there?"); err == nil {
		t.Fatal("a failed first call returned no error")
	}

	entry := func(rs ...assistant.Reply) conversation.Usage {
		var sum conversation.Usage
		for _, r := range rs {
			u := r.Usage
			sum = sum.Add(conversation.Usage{Messages: 1, Tokens: conversation.Tokens{
				Calls: int64(u.Calls), InputTokens: u.InputTokens, CacheWrite5mTokens: u.CacheCreation.Ephemeral5mInputTokens,
				CacheWrite1hTokens: u.CacheCreation.Ephemeral1hInputTokens, CacheReadTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
			}})
		}
		return sum
	}
	got := ledgerOf(t, e)
	day := conversation.UsageDay(e.clock.Now())
	want := []conversation.DailyUsage{
		{Phone: erin, Day: day, Usage: entry(r1, r3)},
		{Phone: jason, Day: day, Usage: entry(r2)},
	}
	if len(got) != len(want) {
		t.Fatalf("ledger = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Phone != want[i].Phone || !got[i].Day.Equal(want[i].Day) || got[i].Usage != want[i].Usage {
			t.Errorf("ledger entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[0].Calls != 3 || got[0].Messages != 2 || got[0].OutputTokens == 0 || got[0].PromptTokens() == 0 {
		t.Errorf("erin's ledger %+v: want 2 messages, 3 calls and the tokens they were billed", got[0].Usage)
	}
}

// The system sender's messages are never stored, usage included.
func TestUsageNotRecordedForSystem(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("Reminder sent."))
	e.mustHandle(conversation.SystemSender, "remind everyone")
	if got := ledgerOf(t, e); len(got) != 0 {
		t.Fatalf("ledger after a system message = %+v, want nothing", got)
	}
}

// failingLedger refuses every addition.
type failingLedger struct{}

func (failingLedger) AddUsage(context.Context, string, time.Time, conversation.Usage) error {
	return errors.New("disk full")
}

// Recording usage changes nothing that is sent: the same conversation with
// a working ledger and a failing one sends the same bytes. A ledger that fails is logged
// and the person still gets the answer.
func TestUsageLedgerChangesNothingSent(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC) }
	run := func(store conversation.Store, ledger assistant.Ledger) ([][]byte, string) {
		srv := anthropictest.NewServer(t)
		mem, err := conversation.New(store, &conversation.Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		reg, _ := assistant.NewRegistry(echoTool("add_item"))
		a, err := assistant.New(srv.Client(), mem, &assistant.Options{Now: clock, Tools: reg, Ledger: ledger,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv.Enqueue(
			anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_01", Name: "add_item", Input: map[string]string{"item": "milk"}}),
			anthropictest.Text("Added milk."),
			anthropictest.Text("You're welcome."),
		)
		for _, text := range []string{"add milk", "thanks"} {
			r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: text})
			if err != nil || r.Text == "" {
				t.Fatalf("Handle(%q) = %q, %v", text, r.Text, err)
			}
		}
		var bodies [][]byte
		for _, req := range srv.Requests() {
			bodies = append(bodies, req.Body)
		}
		return bodies, logs.String()
	}
	with, _ := run(memstore.New(), nil)
	failing, log := run(memstore.New(), failingLedger{})
	if len(failing) != len(with) {
		t.Fatalf("with a failing ledger: %d requests, with a working one %d", len(failing), len(with))
	}
	for i := range failing {
		if !bytes.Equal(failing[i], with[i]) {
			t.Errorf("with a failing ledger, request %d differs:\n%s\nwith a working one:\n%s", i, failing[i], with[i])
		}
	}
	if !strings.Contains(log, "assistant: record usage") || !strings.Contains(log, "disk full") {
		t.Errorf("a failing ledger was not logged:\n%s", log)
	}
}

// A response that splits its cache writes by lifetime, as the API does,
// puts each lifetime in its own count: on the stored turn and in the
// ledger.
func TestUsageSplitFromTheAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_split")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5-5",
			"content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":12,"output_tokens":7,"cache_creation_input_tokens":1500,"cache_read_input_tokens":800,
				"cache_creation":{"ephemeral_5m_input_tokens":300,"ephemeral_1h_input_tokens":1200},"service_tier":"standard"}}`)
	}))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	store := memstore.New()
	mem, _ := conversation.New(store, nil)
	a, err := assistant.New(client, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	want := assistant.CacheCreation{Ephemeral5mInputTokens: 300, Ephemeral1hInputTokens: 1200}
	if r.Usage.CacheCreation != want || r.Usage.CacheCreationInputTokens != 1500 {
		t.Errorf("reply usage %+v, want the split %+v", r.Usage, want)
	}
	c, err := mem.Load(context.Background(), erin)
	if err != nil {
		t.Fatal(err)
	}
	var stored assistant.Usage
	if err := json.Unmarshal(c.Turns[0].Extra["usage"], &stored); err != nil || stored != r.Usage {
		t.Errorf("stored usage %s, want %+v (%v)", c.Turns[0].Extra["usage"], r.Usage, err)
	}
	got, err := mem.UsageSince(context.Background(), time.Time{})
	if err != nil || len(got) != 1 {
		t.Fatalf("ledger = %+v, %v", got, err)
	}
	if u := got[0].Usage; u != (conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 12, CacheWrite5mTokens: 300, CacheWrite1hTokens: 1200, CacheReadTokens: 800, OutputTokens: 7}}) {
		t.Errorf("ledger entry %+v", u)
	}
}

// With a system prompt long enough to cache, the static prefix is written
// for an hour: the fake API reports those writes apart, and the ledger
// keeps them apart from the 5-minute ones.
func TestUsageOneHourWritesReachTheLedger(t *testing.T) {
	e := newEnv(t, &assistant.Options{SystemPrompt: strings.Repeat("You are the family's kind and careful assistant. ", 600)})
	e.srv.Enqueue(anthropictest.Text("Hello Erin."))
	r := e.mustHandle(erin, "hi")
	if r.Usage.CacheCreation.Ephemeral1hInputTokens == 0 {
		t.Fatalf("usage %+v: want the long system prompt written to the cache for an hour", r.Usage)
	}
	got := ledgerOf(t, e)
	if len(got) != 1 || got[0].CacheWrite1hTokens != r.Usage.CacheCreation.Ephemeral1hInputTokens ||
		got[0].CacheWrite5mTokens != r.Usage.CacheCreation.Ephemeral5mInputTokens {
		t.Fatalf("ledger %+v, reply usage %+v", got, r.Usage)
	}
}
