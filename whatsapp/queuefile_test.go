package whatsapp_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/whatsapp"
)

func openQueue(t *testing.T, path string) *whatsapp.QueueFile {
	t.Helper()
	q, err := whatsapp.OpenQueueFile(path, &whatsapp.QueueFileOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// peek returns the head of key's queue, "" when it is empty.
func peek(t *testing.T, q whatsapp.Queue, key string) string {
	t.Helper()
	item, ok, err := q.Peek(context.Background(), key)
	if err != nil {
		t.Fatalf("Peek(%s): %v", key, err)
	}
	if !ok {
		if item != nil {
			t.Errorf("Peek(%s) of an empty queue returned %q", key, item)
		}
		return ""
	}
	return string(item)
}

func keys(t *testing.T, q whatsapp.Queue) []string {
	t.Helper()
	ks, err := q.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	return ks
}

func push(t *testing.T, q whatsapp.Queue, key, item string) {
	t.Helper()
	if err := q.Push(context.Background(), key, []byte(item)); err != nil {
		t.Fatalf("Push(%s, %s): %v", key, item, err)
	}
}

func ack(t *testing.T, q whatsapp.Queue, key, item string) {
	t.Helper()
	if err := q.Ack(context.Background(), key, []byte(item)); err != nil {
		t.Fatalf("Ack(%s, %s): %v", key, item, err)
	}
}

func TestQueueFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inbox.json")
	q := openQueue(t, path)
	if got := keys(t, q); len(got) != 0 {
		t.Fatalf("Keys of a new queue file: %q", got)
	}
	if got := peek(t, q, "+1"); got != "" {
		t.Fatalf("Peek of an empty queue: %q", got)
	}
	push(t, q, "+1", `{"n":1}`)
	push(t, q, "+1", `{"n":2}`)
	push(t, q, "+2", `{"n":3}`)
	if err := q.Push(context.Background(), "+1", []byte("not json")); err == nil {
		t.Error("Push of an item that is not JSON succeeded")
	}
	if got, want := keys(t, q), []string{"+1", "+2"}; !slices.Equal(got, want) {
		t.Fatalf("Keys = %q, want %q", got, want)
	}
	if got := peek(t, q, "+1"); got != `{"n":1}` {
		t.Fatalf("head of +1 = %q, want the first pushed", got)
	}
	if got := peek(t, q, "+1"); got != `{"n":1}` {
		t.Fatalf("a second Peek = %q: Peek removed the head", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}

	t.Run("ack removes the head only when it is the item", func(t *testing.T) {
		ack(t, q, "+1", `{"n":2}`) // not the head
		ack(t, q, "+3", `{"n":1}`) // another key
		if got := peek(t, q, "+1"); got != `{"n":1}` {
			t.Fatalf("head of +1 = %q after Acks of other items", got)
		}
		ack(t, q, "+1", `{"n":1}`)
		ack(t, q, "+1", `{"n":1}`) // repeated: removes nothing else
		if got := peek(t, q, "+1"); got != `{"n":2}` {
			t.Fatalf("head of +1 = %q after the Ack of the first, want the second", got)
		}
	})
	t.Run("survives reopening", func(t *testing.T) {
		q := openQueue(t, path)
		if got, want := keys(t, q), []string{"+1", "+2"}; !slices.Equal(got, want) {
			t.Fatalf("Keys after reopening = %q, want %q", got, want)
		}
		if got := peek(t, q, "+1"); got != `{"n":2}` {
			t.Errorf("head of +1 after reopening = %q", got)
		}
		ack(t, q, "+1", `{"n":2}`)
		if got, want := keys(t, q), []string{"+2"}; !slices.Equal(got, want) {
			t.Fatalf("Keys once +1 is empty = %q, want %q", got, want)
		}
		if got := keys(t, openQueue(t, path)); !slices.Equal(got, []string{"+2"}) {
			t.Fatalf("Keys after an Ack and reopening = %q", got)
		}
	})
	t.Run("items read back equal what Peek returned", func(t *testing.T) {
		push(t, q, "+4", "{ \"text\": \"a <b> & c\",\n \"n\": 4 }")
		before := peek(t, q, "+4")
		q2 := openQueue(t, path)
		after := peek(t, q2, "+4")
		if before != after || before != `{"text":"a <b> & c","n":4}` {
			t.Fatalf("item before reopening %q, after %q", before, after)
		}
		ack(t, q2, "+4", after)
		if got := peek(t, q2, "+4"); got != "" {
			t.Fatalf("an item read back could not be acked: head %q", got)
		}
	})
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestQueueFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	q := openQueue(t, path)
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			for i := range 5 {
				push(t, q, fmt.Sprintf("+%d", k), fmt.Sprintf(`{"n":%d}`, i))
			}
		})
	}
	wg.Wait()
	q = openQueue(t, path)
	for k := range 4 {
		key := fmt.Sprintf("+%d", k)
		for i := range 5 {
			want := fmt.Sprintf(`{"n":%d}`, i)
			if got := peek(t, q, key); got != want {
				t.Fatalf("item %d of %s = %q, want %q", i, key, got, want)
			}
			ack(t, q, key, want)
		}
	}
}

func TestQueueFileDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	if err := os.WriteFile(path, []byte(`{"queues": {"+1": [{"ID": "wamid.A"`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	q, err := whatsapp.OpenQueueFile(path, &whatsapp.QueueFileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, q); len(got) != 0 {
		t.Errorf("Keys of a damaged file: %q", got)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("damaged file not moved aside: %v", aside)
	}
	if data, _ := os.ReadFile(aside[0]); !strings.Contains(string(data), "wamid.A") {
		t.Errorf("the file moved aside lost its content: %q", data)
	}
	if !strings.Contains(logs.String(), "queue file is damaged") {
		t.Errorf("the damaged file was not logged: %s", logs.String())
	}
	push(t, q, "+1", `{}`)
	if got := keys(t, openQueue(t, path)); !slices.Equal(got, []string{"+1"}) {
		t.Errorf("a new file did not replace the damaged one: %q", got)
	}
}

// TestQueueFileWriteFails: an item is kept, or removed, only once that is
// on disk.
func TestQueueFileWriteFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "inbox.json")
	q := openQueue(t, path)
	if err := q.Push(context.Background(), "+1", []byte(`{"n":1}`)); err == nil {
		t.Fatal("Push succeeded without being able to save")
	}
	if got := keys(t, q); len(got) != 0 {
		t.Fatalf("an item whose save failed is queued: %q", got)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	push(t, q, "+1", `{"n":1}`)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(context.Background(), "+1", []byte(`{"n":1}`)); err == nil {
		t.Fatal("Ack succeeded without being able to save")
	}
	if got := peek(t, q, "+1"); got != `{"n":1}` {
		t.Fatalf("an item whose removal could not be saved is gone: head %q", got)
	}
}
