package whatsapp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openDedup(t *testing.T, path string, now time.Time) *whatsapp.DedupFile {
	t.Helper()
	d, err := whatsapp.OpenDedupFile(path, &whatsapp.DedupFileOptions{Now: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// seen checks whether id was handled and, if not, records it at at, as the
// Server does around answering; it reports whether id was new.
func seen(t *testing.T, d whatsapp.Dedup, id string, at time.Time) bool {
	t.Helper()
	done, err := d.Handled(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if done {
		return false
	}
	if err := d.MarkHandled(context.Background(), id, at); err != nil {
		t.Fatal(err)
	}
	return true
}

func handled(t *testing.T, d whatsapp.Dedup, id string) bool {
	t.Helper()
	done, err := d.Handled(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func TestDedupFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen.json")
	t0 := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	now := t0
	d, err := whatsapp.OpenDedupFile(path, &whatsapp.DedupFileOptions{Now: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if handled(t, d, "wamid.A") {
		t.Fatal("an id never recorded is handled")
	}
	if !seen(t, d, "wamid.A", t0) {
		t.Fatal("first sight of an id is not first")
	}
	if seen(t, d, "wamid.A", t0.Add(time.Minute)) {
		t.Fatal("second sight of an id is first")
	}
	if !seen(t, d, "wamid.B", t0.Add(time.Minute)) {
		t.Fatal("another id is not first")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}

	t.Run("survives reopening", func(t *testing.T) {
		d := openDedup(t, path, t0.Add(time.Hour))
		if seen(t, d, "wamid.A", t0.Add(time.Hour)) || seen(t, d, "wamid.B", t0.Add(time.Hour)) {
			t.Error("an id seen before reopening is first again")
		}
	})
	t.Run("expires after the TTL", func(t *testing.T) {
		later := t0.Add(whatsapp.DedupTTL + 2*time.Minute)
		d := openDedup(t, path, later)
		if !seen(t, d, "wamid.A", later) {
			t.Error("an id seen more than 7 days ago is not first")
		}
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), "wamid.B") {
			t.Error("an expired id is still in the file")
		}
	})
	t.Run("expires without reopening", func(t *testing.T) {
		now = t0.Add(whatsapp.DedupTTL + time.Hour)
		if !seen(t, d, "wamid.B", now) {
			t.Error("an id seen more than 7 days ago is not first")
		}
	})
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestDedupFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen.json")
	d := openDedup(t, path, time.Now())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("wamid.%d", i%4)
			if err := d.MarkHandled(context.Background(), id, time.Now()); err != nil {
				t.Error(err)
			}
			if !handled(t, d, id) {
				t.Errorf("%s not handled after MarkHandled", id)
			}
		})
	}
	wg.Wait()
	d = openDedup(t, path, time.Now())
	for i := range 4 {
		if id := fmt.Sprintf("wamid.%d", i); !handled(t, d, id) {
			t.Errorf("%s recorded concurrently was not saved", id)
		}
	}
}

func TestDedupFileDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seen.json")
	if err := os.WriteFile(path, []byte(`{"seen": {"wamid.A": "yesterday"`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := openDedup(t, path, time.Now())
	if !seen(t, d, "wamid.A", time.Now()) {
		t.Error("id from a damaged file is remembered")
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Errorf("damaged file not moved aside: %v", aside)
	}
}

// TestDedupFileWriteFails: an id whose save fails is returned as an error
// but remembered by the process, which must not answer it again; the next
// MarkHandled of it, once the disk works, writes it.
func TestDedupFileWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "seen.json")
	d := openDedup(t, path, time.Now())
	if err := d.MarkHandled(context.Background(), "wamid.A", time.Now()); err == nil {
		t.Fatal("MarkHandled succeeded without being able to save")
	}
	if !handled(t, d, "wamid.A") {
		t.Fatal("an id whose save failed is forgotten by the process: it would be answered again")
	}
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if handled(t, openDedup(t, path, time.Now()), "wamid.A") {
		t.Fatal("an id whose save failed is on disk")
	}
	if err := d.MarkHandled(context.Background(), "wamid.A", time.Now()); err != nil {
		t.Fatalf("MarkHandled again once the disk works: %v", err)
	}
	if !handled(t, openDedup(t, path, time.Now()), "wamid.A") {
		t.Error("recording the id again did not save it")
	}
}
