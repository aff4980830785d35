package lists_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/internal/pgtest"
	"github.com/mombot/mombot/internal/redistest"
)

// TestSharedByReplicas checks what two replicas on one shared store see:
// an item added through one is on the list through the other, one removed
// through the other is gone from both, and items both add at once are all
// kept, on Redis and on PostgreSQL.
func TestSharedByReplicas(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(t *testing.T) func() conversation.Store
	}{
		{"redis", func(t *testing.T) func() conversation.Store {
			url, prefix := redistest.URL(t), redistest.Prefix(t)
			return func() conversation.Store {
				s, err := redis.Open(context.Background(), url, &redis.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"postgres", func(t *testing.T) func() conversation.Store {
			url, schema := pgtest.URL(t), pgtest.Name(t)
			return func() conversation.Store {
				s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			open := tt.open(t)
			var replicas [2]*lists.Store
			for i := range replicas {
				mem, err := conversation.New(open(), nil)
				if err != nil {
					t.Fatal(err)
				}
				replicas[i] = lists.New(mem, nil)
			}
			a, b := replicas[0], replicas[1]
			if _, err := a.Add(ctx, "grocery", []string{"milk", "eggs"}, "Erin"); err != nil {
				t.Fatal(err)
			}
			if items, err := b.Items(ctx, "grocery"); err != nil || texts(items) != "[milk eggs]" {
				t.Fatalf("the other replica sees %v, %v; want [milk eggs]", texts(items), err)
			}
			if _, _, err := b.Remove(ctx, "grocery", []string{"milk"}, nil, "Jason"); err != nil {
				t.Fatal(err)
			}
			if items, _ := a.Items(ctx, "grocery"); texts(items) != "[eggs]" {
				t.Fatalf("after a removal through the other replica: %v, want [eggs]", texts(items))
			}
			var wg sync.WaitGroup
			for i := range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := replicas[i%2].Add(ctx, "to-do", []string{fmt.Sprint("task ", i)}, ""); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if items, _ := a.Items(ctx, "to-do"); len(items) != 10 {
				t.Errorf("%d items on the list, want 10: an add was lost", len(items))
			}
		})
	}
}
