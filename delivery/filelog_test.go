package delivery_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

// lines returns the lines of the file at path, failing the test when one
// is not JSON.
func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d of %s is not JSON: %q", len(out)+1, path, sc.Text())
		}
		out = append(out, sc.Text())
	}
	return out
}

// TestFileTornRecord: a record a killed process left half written is
// ignored, every acknowledged message before it is kept, and the next
// write cuts it off rather than continuing it.
func TestFileTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	f := openFile(t, path, nil)
	deliverytest.Push(t, f, deliverytest.Msg("+1", "a1"), deliverytest.Msg("+1", "a2"))
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"op":"push","id":"a3","key":"+1","bo`)
	fh.Close()

	g := openFile(t, path, nil)
	if m, _ := deliverytest.Peek(t, g, "+1"); m.ID != "a1" {
		t.Fatalf("head after a torn record = %q, want a1", m.ID)
	}
	deliverytest.Push(t, g, deliverytest.Msg("+1", "a4"))
	h := openFile(t, path, nil)
	for _, id := range []string{"a1", "a2", "a4"} {
		if m, _ := deliverytest.Peek(t, h, "+1"); m.ID != id {
			t.Fatalf("head = %q, want %s", m.ID, id)
		}
		deliverytest.Done(t, h, "+1", id)
	}
	lines(t, path) // every line whole
}

// TestFileAppends: Push appends one record per message and Done one, each
// call with one fsync and no rewrite, however long the queues; the file
// read again says the same.
func TestFileAppends(t *testing.T) {
	syncs, rewrites := delivery.CountFileWrites(t.Cleanup, 1000)
	path := filepath.Join(t.TempDir(), "inbox.json")
	f := openFile(t, path, nil)
	deliverytest.Push(t, f, deliverytest.Msg("+1", "a0")) // creates the file: a rewrite
	syncs.Store(0)
	rewrites.Store(0)
	for i := range 3 {
		var batch []delivery.Message
		for j := range 100 {
			batch = append(batch, deliverytest.Msg(fmt.Sprintf("+%d", j%7), fmt.Sprintf("m%d.%d", i, j)))
		}
		deliverytest.Push(t, f, batch...)
	}
	deliverytest.Done(t, f, "+1", "a0")
	if syncs.Load() != 4 || rewrites.Load() != 0 {
		t.Errorf("3 pushes and a Done: %d fsyncs and %d rewrites, want 4 and 0", syncs.Load(), rewrites.Load())
	}
	if n := len(lines(t, path)); n != 1+1+300+1 {
		t.Errorf("%d lines, want the header and 302 records", n)
	}
	g := openFile(t, path, nil)
	if m, _ := deliverytest.Peek(t, g, "+1"); m.ID != "m0.1" {
		t.Errorf("head of +1 read again = %q, want m0.1", m.ID)
	}
}

// TestFileCompacts: the log is rewritten once it holds more than twice the
// records its state needs, and the ids handled more than HandledFor ago
// go then; what it holds stays the same.
func TestFileCompacts(t *testing.T) {
	_, rewrites := delivery.CountFileWrites(t.Cleanup, 0)
	t0 := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "inbox.json")
	f := openFile(t, path, clock)
	for i := range 20 {
		deliverytest.Push(t, f, deliverytest.Msg("+1", fmt.Sprintf("a%d", i)))
		deliverytest.Push(t, f, deliverytest.Msg("+2", fmt.Sprintf("b%d", i)))
		deliverytest.Done(t, f, "+1", fmt.Sprintf("a%d", i))
		// Live: the ids handled and the messages waiting; the log holds at
		// most twice that, and its header.
		if n, live := len(lines(t, path))-1, 2*(i+1); n > 2*live+2 {
			t.Fatalf("after %d rounds the log holds %d records for %d live", i+1, n, live)
		}
	}
	now = t0.Add(delivery.HandledFor + time.Hour)
	deliverytest.Erase(t, f, "+9") // nothing to erase: no write
	deliverytest.Push(t, f, deliverytest.Msg("+3", "c0"))
	for range 50 {
		deliverytest.Done(t, f, "+3", "none")
	}
	if rewrites.Load() < 2 {
		t.Errorf("%d rewrites, want the log compacted", rewrites.Load())
	}
	for _, l := range lines(t, path) {
		if bytes.Contains([]byte(l), []byte(`"id":"a`)) {
			t.Fatalf("an id handled more than HandledFor ago is still in the log: %s", l)
		}
	}
	g := openFile(t, path, clock)
	if got := deliverytest.Keys(t, g); !slices.Equal(got, []string{"+2", "+3"}) {
		t.Errorf("Keys = %q, want [+2 +3]", got)
	}
	if m, _ := deliverytest.Peek(t, g, "+2"); m.ID != "b0" {
		t.Errorf("head of +2 = %q, want b0", m.ID)
	}
}

// TestFileDeliveryOfManyMessages: a webhook delivery of 5,000 messages is
// accepted by a Pipeline on a File with one fsync and no rewrite.
func TestFileDeliveryOfManyMessages(t *testing.T) {
	syncs, rewrites := delivery.CountFileWrites(t.Cleanup, 1000)
	f := openFile(t, filepath.Join(t.TempDir(), "inbox.json"), nil)
	deliverytest.Push(t, f, deliverytest.Msg("+1", "first")) // the file exists
	h := &held{release: make(chan struct{})}
	p := delivery.New(h, &delivery.Options{Inbox: f, Logger: quiet})
	defer func() {
		// Not answered: what is left waits for the next start.
		cut, cancel := context.WithCancel(context.Background())
		cancel()
		p.Shutdown(cut)
		close(h.release)
	}()
	syncs.Store(0)
	rewrites.Store(0)
	batch := make([]delivery.Message, 5000)
	for i := range batch {
		batch[i] = deliverytest.Msg(fmt.Sprintf("+1415555%04d", i%40), fmt.Sprintf("wamid.%d", i))
	}
	for i, err := range p.Accept(context.Background(), batch...) {
		if err != nil {
			t.Fatalf("Accept of message %d: %v", i, err)
		}
	}
	if syncs.Load() != 1 || rewrites.Load() != 0 {
		t.Errorf("a delivery of 5,000 messages: %d fsyncs and %d rewrites, want 1 and 0", syncs.Load(), rewrites.Load())
	}
}

// held is a Handler whose Answer waits for release.
type held struct{ release chan struct{} }

func (h *held) Answer(ctx, _ context.Context, m delivery.Message) ([]string, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("%w: test", delivery.ErrSkip)
}

func (h *held) Send(context.Context, delivery.Message, []string) (int, error) { return 0, nil }
