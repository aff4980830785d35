package metrics_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/metrics"
)

func TestStoreTimesOperationsAndCountsFailures(t *testing.T) {
	m := metrics.New()
	s := m.Store(memstore.New())
	ctx := context.Background()
	const erin = "+14155551234"
	now := time.Now()
	if _, err := s.Load(ctx, erin); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("load of nothing: %v", err)
	}
	if _, err := s.RecallMessage(ctx, erin, "wamid.1", now); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("recall of nothing: %v", err)
	}
	s.Delete(ctx, erin)
	s.List(ctx)
	if err := s.AddUsage(ctx, erin, now, conversation.Usage{Messages: 1, Calls: 1, InputTokens: 10}); err != nil {
		t.Fatal(err)
	}
	if days, err := s.UsageSince(ctx, time.Time{}); err != nil || len(days) != 1 {
		t.Fatalf("usage through the wrapper: %v, %v", days, err)
	}
	if err := s.RememberMessages(ctx, erin, now, conversation.RecentMessage{ID: "wamid.2", Role: conversation.RoleUser, Text: "hi", At: now}); err != nil {
		t.Fatal(err)
	}
	if msg, err := s.RecallMessage(ctx, erin, "wamid.2", now); err != nil || msg.Text != "hi" {
		t.Fatalf("recall through the wrapper: %+v, %v", msg, err)
	}
	if err := s.ForgetMessages(ctx, erin); err != nil {
		t.Fatal(err)
	}
	ops := []string{"load", "delete", "list", "add_usage", "usage_since", "remember", "recall", "forget"}
	if got := testutil.CollectAndCount(m.Registry(), "mombot_store_operation_duration_seconds"); got != len(ops) {
		t.Errorf("%d store operations timed, want %d: %v", got, len(ops), ops)
	}
	// A conversation or message not found is an answer, not a failure.
	if got := testutil.CollectAndCount(m.Registry(), "mombot_store_errors_total"); got != 0 {
		t.Errorf("%d store error series after only not-found answers, want 0", got)
	}
	failing := m.Store(failStore{memstore.New()})
	failing.List(ctx)
	if got := sample(t, m, `mombot_store_errors_total{op="list"}`); got != 1 {
		t.Errorf("failed lists counted: %v, want 1", got)
	}
	text := scrapeText(t, m)
	if strings.Contains(text, "4155551234") {
		t.Errorf("a phone reached the metrics:\n%s", text)
	}
}

// TestStorePassesEverythingThrough: the wrapper of each store of this
// module has every method the store has, with the same signature, so that
// nothing a store can do is lost to a caller that finds it by type
// assertion (the assistant's usage ledger, the memory's recent messages
// and sweeping, migrate's Replace). A new method on a store fails this
// test until the wrapper passes it through or it is listed in handles.
func TestStorePassesEverythingThrough(t *testing.T) {
	// handles are the methods that reach a backend's own machinery rather
	// than the conversation contract; they are used on the bare store.
	handles := map[string]bool{"Client": true, "Ping": true, "Prefix": true, "Path": true}
	m := metrics.New()
	for _, s := range []metrics.Backend{
		(*jsonfile.Store)(nil), (*sqlite.Store)(nil), (*redis.Store)(nil), (*memstore.Store)(nil),
		sweepStore{}, failStore{},
	} {
		// Wrapping only looks at the store's type: a nil one will do.
		w := reflect.ValueOf(m.Store(s))
		sv := reflect.ValueOf(s)
		for i := range sv.NumMethod() {
			name := sv.Type().Method(i).Name
			if handles[name] {
				continue
			}
			got := w.MethodByName(name)
			if !got.IsValid() {
				t.Errorf("the wrapper of a %T has no %s: whoever looks for it through the metrics loses it", s, name)
				continue
			}
			if want := sv.Method(i).Type(); got.Type() != want {
				t.Errorf("the wrapper of a %T: %s is %v, the store's is %v", s, name, got.Type(), want)
			}
		}
		for i := range w.NumMethod() {
			if name := w.Type().Method(i).Name; !sv.MethodByName(name).IsValid() {
				t.Errorf("the wrapper of a %T has %s, which the store has not", s, name)
			}
		}
	}
}

// failStore is a store whose List fails.
type failStore struct{ *memstore.Store }

func (failStore) List(context.Context) ([]conversation.Summary, error) {
	return nil, errors.New("disk on fire")
}

// sweepStore is a store that sweeps.
type sweepStore struct{ *memstore.Store }

func (sweepStore) Sweep(context.Context, time.Time) (int, error) { return 0, nil }
