package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/metrics"
)

// Metrics wrap what the server is wired from, and serve the result on an
// address of their own.
func Example() {
	m := metrics.New()
	store := m.Store(memstore.New()) // give this one to conversation.New
	store.List(context.Background(), conversation.Conversations, "")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "mombot_store_operation_duration_seconds_count") {
			fmt.Println(line)
		}
	}
	// Output: mombot_store_operation_duration_seconds_count{kind="conversations",op="list"} 1
}
