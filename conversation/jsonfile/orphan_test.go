package jsonfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

// phonesInFile returns the phones a fresh store opened on path lists.
func phonesInFile(t *testing.T, path string) string {
	t.Helper()
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sum := range l {
		got = append(got, sum.Phone)
	}
	return strings.Join(got, " ")
}

// TestParseFailureThenValidFileKeepsClear: a reader finds the file does not
// parse, and by the time it holds the lock file the file is valid again and
// lacks a conversation that was cleared meanwhile. Nothing was lost, so the
// reader must not bring the cleared conversation back.
func TestParseFailureThenValidFileKeepsClear(t *testing.T) {
	for _, how := range []string{"another store clears", "a writer without the lock rewrites in place"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conversations.json")
			now := time.Now()
			_, reader := open(t, path, now, nil)
			for _, p := range []string{"+1", "+2"} {
				if err := reader.SaveTurn(ctx, p, storetest.TextTurn("hi "+p, "hello")); err != nil {
					t.Fatal(err)
				}
			}
			valid, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// What the writer without the lock writes: the file without +1.
			alt := filepath.Join(t.TempDir(), "alt.json")
			if err := os.WriteFile(alt, valid, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := openMem(t, alt).Clear(ctx, "+1"); err != nil {
				t.Fatal(err)
			}
			without1, err := os.ReadFile(alt)
			if err != nil {
				t.Fatal(err)
			}
			_, other := open(t, path, now, nil)
			if h, _ := other.History(ctx, "+1"); len(h) != 2 {
				t.Fatalf("the other store sees %d messages of +1, want 2", len(h))
			}
			// A writer that ignores the lock file is half way through
			// rewriting the file in place.
			if err := os.WriteFile(path, valid[:len(valid)/2], 0o600); err != nil {
				t.Fatal(err)
			}
			ran := false
			defer jsonfile.SetParseFailedHook(func() {
				if ran {
					return
				}
				ran = true
				if how == "another store clears" {
					// It moves the half-written file aside under the lock
					// and writes what it holds, without +1.
					if err := other.Clear(ctx, "+1"); err != nil {
						t.Error(err)
					}
					return
				}
				// The writer finishes: its file has +2 only.
				if err := os.WriteFile(path, without1, 0o600); err != nil {
					t.Error(err)
				}
			})()
			if h, err := reader.History(ctx, "+1"); err != nil || len(h) != 0 {
				t.Fatalf("History(+1) after another process cleared it = %d messages, %v; want none", len(h), err)
			}
			if !ran {
				t.Fatal("the reader never found the half-written file")
			}
			if err := reader.SaveTurn(ctx, "+3", storetest.TextTurn("three", "3")); err != nil {
				t.Fatal(err)
			}
			if got := phonesInFile(t, path); got != "+2 +3" {
				t.Fatalf("the file after the reader's next save holds %q, want +2 +3", got)
			}
		})
	}
}

// openMem opens a memory on the file at path with a quiet logger.
func openMem(t *testing.T, path string) *conversation.Memory {
	t.Helper()
	_, m := open(t, path, time.Now(), nil)
	return m
}

// TestVanishedConversationsMergedOnce: the file vanishes, another process
// starts a new one, and the store that held the lost conversations merges
// them into it once and writes them at once, so that the other process sees
// them and a later Clear there stays cleared.
func TestVanishedConversationsMergedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	now := time.Now()
	_, first := open(t, path, now, nil)
	for _, p := range []string{"+1", "+2"} {
		if err := first.SaveTurn(ctx, p, storetest.TextTurn("hi "+p, "hello")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if h, err := first.History(ctx, "+1"); err != nil || len(h) != 2 {
		t.Fatalf("History(+1) after the file vanished = %d messages, %v; want the 2 in memory", len(h), err)
	}
	_, second := open(t, path, now, nil)
	if err := second.SaveTurn(ctx, "+3", storetest.TextTurn("new", "one")); err != nil {
		t.Fatal(err)
	}
	// The first store reads the new file, merges +1 and +2 into it and
	// writes it: the file holds all three without a save of its own.
	if l, err := first.List(ctx); err != nil || len(l) != 3 {
		t.Fatalf("List after the new file appeared = %d, %v; want 3", len(l), err)
	}
	if got := phonesInFile(t, path); got != "+1 +2 +3" {
		t.Fatalf("the file after the merge holds %q, want +1 +2 +3", got)
	}
	// The second store clears +1; the first must not bring it back.
	if err := second.Clear(ctx, "+1"); err != nil {
		t.Fatalf("Clear(+1) in the second store: %v", err)
	}
	if h, err := first.History(ctx, "+1"); err != nil || len(h) != 0 {
		t.Fatalf("History(+1) in the first store after the second cleared it = %d messages, %v; want none", len(h), err)
	}
	if err := first.SaveTurn(ctx, "+4", storetest.TextTurn("four", "4")); err != nil {
		t.Fatal(err)
	}
	if got := phonesInFile(t, path); got != "+2 +3 +4" {
		t.Fatalf("the file after the first store's next save holds %q, want +2 +3 +4", got)
	}
}
