package conversation

import (
	"fmt"
	"testing"
)

// A full cache keeps what it holds when one of its conversations is
// cached again at a new version; only a new conversation empties it.
func TestReadCacheFullKeepsWhatItHolds(t *testing.T) {
	var r readCache
	phone := func(i int) string { return fmt.Sprintf("+1555%07d", i) }
	for i := range readCacheSize {
		r.put(Conversation{Phone: phone(i), Version: 1})
	}
	r.put(Conversation{Phone: phone(0), Version: 2})
	if _, ok := r.get(phone(0), 2); !ok {
		t.Fatal("the conversation cached again is not held")
	}
	if _, ok := r.get(phone(1), 1); !ok {
		t.Fatal("caching a held conversation again emptied the full cache")
	}
	r.put(Conversation{Phone: phone(readCacheSize), Version: 1})
	if _, ok := r.get(phone(1), 1); ok || len(r.convs) != 1 {
		t.Fatalf("a new conversation in a full cache: %d held, want 1", len(r.convs))
	}
}
