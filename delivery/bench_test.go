package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/internal/atomicfile"
)

// BenchmarkFileMessage measures what the inbox file costs one answered
// message: its Push when acknowledged, and its Done once the reply is
// sent, two fsync-bound rewrites. The previous design, measured beside
// it, wrote three: the queue file at the push, the file of handled ids
// once sent, and the queue file again to remove it. Each file holds 1,000
// ids handled, as a family's week does.
func BenchmarkFileMessage(b *testing.B) {
	ctx := context.Background()
	b.Run("design=one-done", func(b *testing.B) {
		f, err := delivery.OpenFile(filepath.Join(b.TempDir(), "inbox.json"), &delivery.FileOptions{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			f.Done(ctx, "+1", fmt.Sprintf("wamid.old.%d", i))
		}
		b.ResetTimer()
		for i := range b.N {
			m := deliverytest.Msg("+14155551234", fmt.Sprintf("wamid.%d", i))
			if _, err := f.Push(ctx, m); err != nil {
				b.Fatal(err)
			}
			if _, _, err := f.Peek(ctx, m.Key); err != nil {
				b.Fatal(err)
			}
			if err := f.Done(ctx, m.Key, m.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("design=queue-and-seen-files", func(b *testing.B) {
		dir := b.TempDir()
		queue, seenPath := filepath.Join(dir, "whatsapp-inbox.json"), filepath.Join(dir, "whatsapp-seen.json")
		seen := map[string]time.Time{}
		for i := range 1000 {
			seen[fmt.Sprintf("wamid.old.%d", i)] = time.Now()
		}
		write := func(path string, v any) {
			data, err := json.Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			if err := atomicfile.WriteFile(path, data); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for i := range b.N {
			m := deliverytest.Msg("+14155551234", fmt.Sprintf("wamid.%d", i))
			write(queue, map[string]any{"queues": map[string][]json.RawMessage{m.Key: {m.Body}}})
			seen[m.ID] = time.Now()
			write(seenPath, map[string]any{"seen": seen})
			write(queue, map[string]any{"queues": map[string][]json.RawMessage{}})
		}
	})
}
