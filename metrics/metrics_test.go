package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/metrics"
)

// The usage of a Messages response, as the API documents it
// (https://docs.anthropic.com/en/api/messages: usage.cache_creation splits
// the cache writes by TTL).
const messagesResponse = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],
"model":"claude-x","stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":7,
"cache_read_input_tokens":300,"cache_creation_input_tokens":50,
"cache_creation":{"ephemeral_5m_input_tokens":20,"ephemeral_1h_input_tokens":30}}}`

func TestTransportCountsStatusAndTokensAndKeepsTheBody(t *testing.T) {
	status := http.StatusOK
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, messagesResponse)
	}))
	defer api.Close()
	m := metrics.New()
	c := &http.Client{Transport: m.Transport(nil)}
	post := func() string {
		resp, err := c.Post(api.URL+"/v1/messages", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := post(); got != messagesResponse {
		t.Errorf("the client got %q, want the response unchanged", got)
	}
	status = http.StatusTooManyRequests
	post() // an error response: counted by status, its body's usage is not
	want := `
# HELP mombot_anthropic_tokens_total Tokens the Anthropic API reported in its usage, by kind: input, cache_write_5m, cache_write_1h, cache_read, output.
# TYPE mombot_anthropic_tokens_total counter
mombot_anthropic_tokens_total{kind="cache_read"} 300
mombot_anthropic_tokens_total{kind="cache_write_1h"} 30
mombot_anthropic_tokens_total{kind="cache_write_5m"} 20
mombot_anthropic_tokens_total{kind="input"} 10
mombot_anthropic_tokens_total{kind="output"} 7
# HELP mombot_anthropic_requests_total HTTP requests to the Anthropic API, each retry counted, by status code ("error" for no answer).
# TYPE mombot_anthropic_requests_total counter
mombot_anthropic_requests_total{status="200"} 1
mombot_anthropic_requests_total{status="429"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "mombot_anthropic_tokens_total", "mombot_anthropic_requests_total"); err != nil {
		t.Error(err)
	}

	// No answer at all is counted as "error".
	api.Close()
	if _, err := c.Get(api.URL + "/v1/messages"); err == nil {
		t.Fatal("a closed server answered")
	}
	if got := sample(t, m, `mombot_anthropic_requests_total{status="error"}`); got != 1 {
		t.Errorf("requests without an answer: %v, want 1", got)
	}
}

// scrapeText returns what m's handler serves.
func scrapeText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// sample returns the value of one series, written as the exposition
// writes it ("name{a=\"b\"}", or the bare name), or -1 when it is absent.
func sample(t *testing.T, m *metrics.Metrics, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrapeText(t, m), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

func TestStoreTimesOperationsAndCountsFailures(t *testing.T) {
	m := metrics.New()
	s := m.Store(memstore.New())
	ctx := context.Background()
	if _, err := s.Get(ctx, conversation.Conversations, "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("get of nothing: %v", err)
	}
	s.Delete(ctx, conversation.Conversations, "+14155551234", 0)
	s.List(ctx, conversation.Conversations, "")
	s.Put(ctx, conversation.Recent, conversation.Record{Key: "+14155551234", Data: []byte("[]")}, 0)
	s.Put(ctx, conversation.Recent, conversation.Record{Key: "+14155551234", Data: []byte("[]")}, 0) // a conflict
	if got := testutil.CollectAndCount(m.Registry(), "mombot_store_operation_duration_seconds"); got != 4 {
		t.Errorf("%d store operation series timed, want get, delete, list and put", got)
	}
	// A record not found, or changed meanwhile, is an answer, not a failure.
	if got := testutil.CollectAndCount(m.Registry(), "mombot_store_errors_total"); got != 0 {
		t.Errorf("%d store error series after only not-found and conflict answers, want 0", got)
	}
	failing := m.Store(failStore{memstore.New()})
	failing.List(ctx, conversation.UsageDays, "")
	if got := sample(t, m, `mombot_store_errors_total{kind="usage",op="list"}`); got != 1 {
		t.Errorf("failed lists counted: %v, want 1", got)
	}
	text := scrapeText(t, m)
	if strings.Contains(text, "4155551234") {
		t.Errorf("a phone reached the metrics:\n%s", text)
	}
}

// TestStorePassesEveryKind: whatever wraps the store, the memory's records
// of every kind (the usage ledger and recent messages too) reach it.
func TestStorePassesEveryKind(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	// One turn kept, and a running summary: the first turn, pushed out by
	// the second, waits in the summaries.
	mem, err := conversation.New(metrics.New().Store(inner), &conversation.Options{MaxTurns: 1, Summarize: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	phone := "+14155551234"
	mem.AddUsage(ctx, phone, time.Now(), conversation.Usage{Messages: 1})
	mem.Remember(ctx, phone, conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: time.Now()})
	mem.SaveTurn(ctx, phone, []conversation.Message{conversation.UserText("hi"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("hello"))})
	mem.SaveTurn(ctx, phone, []conversation.Message{conversation.UserText("again"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("hello again"))})
	fam := conversation.Family{ID: conversation.DefaultFamilyID, Members: map[string]string{phone: "Erin"}}
	mem.AddNote(ctx, fam, phone, conversation.NewNote{Text: "likes tea", Scope: conversation.ScopeFamily})
	mem.UpdateFamilyLists(ctx, func(l *conversation.FamilyLists) error {
		l.Add("grocery", []conversation.ListItem{{Text: "milk", AddedAt: time.Now()}})
		return nil
	})
	for _, kind := range conversation.Kinds {
		if recs, _ := inner.List(ctx, kind, ""); len(recs) != 1 {
			t.Errorf("%s: %d records behind the wrapper, want 1", kind, len(recs))
		}
	}
}

func TestObserverAndReplies(t *testing.T) {
	m := metrics.New()
	m.Webhook("")
	m.Webhook("bad_signature")
	m.MessageSkipped("too_old")
	m.SendAttempt(false, true)
	m.SendAttempt(true, false)
	m.ReplyNotSent(true)
	m.ReplyTime(2 * time.Second)
	m.ReplyTime(time.Second)
	m.Message(metrics.OutcomeAnswered, "")
	m.Message(metrics.OutcomeAnswered, metrics.ReasonNotSaved)
	m.Message(metrics.OutcomeApologized, "")
	m.Message(metrics.OutcomeNotSent, "")
	m.MessageRefused()
	for _, c := range []struct{ name, labels string }{
		{"mombot_webhooks_total", `reason="",result="received"`},
		{"mombot_webhooks_total", `reason="bad_signature",result="refused"`},
		{"mombot_messages_total", `outcome="skipped",reason="too_old"`},
		{"mombot_messages_total", `outcome="answered",reason=""`},
		{"mombot_messages_total", `outcome="answered",reason="not_saved"`},
		{"mombot_messages_total", `outcome="apologized",reason=""`},
		{"mombot_messages_total", `outcome="not_sent",reason=""`},
		{"mombot_messages_total", `outcome="refused",reason=""`},
		{"mombot_graph_send_attempts_total", `result="sent"`},
		{"mombot_graph_send_attempts_total", `result="failed"`},
		{"mombot_graph_replies_not_sent_total", `failure="permanent"`},
	} {
		if got := sample(t, m, c.name+"{"+c.labels+"}"); got != 1 {
			t.Errorf("%s{%s} = %v, want 1", c.name, c.labels, got)
		}
	}
	if got := sample(t, m, "mombot_reply_duration_seconds_count"); got != 2 {
		t.Errorf("replies timed: %v, want 2", got)
	}
}

// The inbox's depth counts senders, not messages: two messages from one
// sender are one sender waiting.
func TestInboxDepth(t *testing.T) {
	m := metrics.New()
	var inbox delivery.Volatile
	for _, msg := range []delivery.Message{deliverytest.Msg("+1", "a"), deliverytest.Msg("+1", "b"), deliverytest.Msg("+2", "c"), deliverytest.Msg("+3", "d")} {
		deliverytest.Push(t, &inbox, msg)
	}
	m.InboxDepth(&inbox)
	if got := sample(t, m, "mombot_inbox_senders"); got != 3 {
		t.Errorf("inbox senders %v, want 3", got)
	}
}

// failStore is a store whose List fails.
type failStore struct{ *memstore.Store }

func (failStore) List(context.Context, conversation.Kind, string) ([]conversation.Record, error) {
	return nil, errors.New("disk on fire")
}
