package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/internal/atomicfile"
)

// delivery returns a webhook delivery's worth of n messages from 40
// senders, with ids unique to round.
func deliveryOf(n, round int) []delivery.Message {
	batch := make([]delivery.Message, n)
	for i := range batch {
		batch[i] = deliverytest.Msg(fmt.Sprintf("+1415555%04d", i%40), fmt.Sprintf("wamid.%d.%d", round, i))
	}
	return batch
}

// BenchmarkFileDelivery measures what acknowledging one webhook delivery
// of 5,000 messages costs through a Pipeline on the inbox file, from
// Accept to the answer Meta waits for, against its floor: the same
// records written with one fsync. The design that rewrote the whole file
// for each message is measured beside it on 500 messages (5,000 take
// about a minute). Each round starts from an empty inbox.
func BenchmarkFileDelivery(b *testing.B) {
	ctx := context.Background()
	b.Run("inbox=file/messages=5000", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			f, err := delivery.OpenFile(filepath.Join(b.TempDir(), "inbox.json"), &delivery.FileOptions{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			deliverytest.Push(b, f, deliverytest.Msg("+1", "first"))
			h := &held{release: make(chan struct{})}
			p := delivery.New(h, &delivery.Options{Inbox: f, Logger: quiet})
			batch := deliveryOf(5000, i)
			b.StartTimer()
			for _, err := range p.Accept(ctx, batch...) {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// Not answered: what is left waits for the next start.
			cut, cancel := context.WithCancel(ctx)
			cancel()
			p.Shutdown(cut)
			close(h.release)
			f.Close()
			b.StartTimer()
		}
	})
	b.Run("floor=one-fsync/messages=5000", func(b *testing.B) {
		var data []byte
		for _, m := range deliveryOf(5000, 0) {
			rec, _ := json.Marshal(map[string]any{"op": "push", "id": m.ID, "key": m.Key, "body": m.Body})
			data = append(append(data, rec...), '\n')
		}
		for range b.N {
			fh, err := os.CreateTemp(b.TempDir(), "floor")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := fh.Sync(); err != nil {
				b.Fatal(err)
			}
			fh.Close()
		}
	})
	b.Run("design=rewrite-per-message/messages=500", func(b *testing.B) {
		for range b.N {
			path := filepath.Join(b.TempDir(), "inbox.json")
			queues := map[string][]delivery.Message{}
			for _, m := range deliveryOf(500, 0) {
				queues[m.Key] = append(queues[m.Key], m)
				data, err := json.Marshal(map[string]any{"queues": queues})
				if err != nil {
					b.Fatal(err)
				}
				if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkFileMessage measures what the inbox file costs one answered
// message, its Push when acknowledged, its Peek, its Sending before the
// reply is sent and its Done once it is, with 1,000 ids handled and 1,000
// messages waiting, against its floor: two records appended, each with an
// fsync (Sending appends without one).
func BenchmarkFileMessage(b *testing.B) {
	ctx := context.Background()
	b.Run("inbox=file", func(b *testing.B) {
		f, err := delivery.OpenFile(filepath.Join(b.TempDir(), "inbox.json"), &delivery.FileOptions{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for i := range 1000 {
			f.Done(ctx, "+1", fmt.Sprintf("wamid.old.%d", i))
		}
		deliverytest.Push(b, f, deliveryOf(1000, -1)...)
		b.ResetTimer()
		for i := range b.N {
			m := deliverytest.Msg("+14155551234", fmt.Sprintf("wamid.%d", i))
			deliverytest.Push(b, f, m)
			if _, _, err := f.Peek(ctx, m.Key); err != nil {
				b.Fatal(err)
			}
			if err := f.Sending(ctx, m.Key, m.ID); err != nil {
				b.Fatal(err)
			}
			if err := f.Done(ctx, m.Key, m.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=two-appends", func(b *testing.B) {
		fh, err := os.Create(filepath.Join(b.TempDir(), "floor"))
		if err != nil {
			b.Fatal(err)
		}
		defer fh.Close()
		rec, _ := json.Marshal(deliverytest.Msg("+14155551234", "wamid.0"))
		for range b.N {
			for range 2 {
				fh.Write(append(rec, '\n'))
				if err := fh.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
