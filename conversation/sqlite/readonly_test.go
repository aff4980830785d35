package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// openRO opens path read-only and closes it when the test ends.
func openRO(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read-only: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// seedDB writes a conversation, a day of usage and a recent message into a
// new database, closes it and returns its path.
func seedDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mem, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return storetest.Start }})
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "+14155551234", storetest.Start, conversation.Usage{Messages: 1, Calls: 1, InputTokens: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.RememberMessages(ctx, "+14155551234", storetest.Start, conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: storetest.Start}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadOnlyCreatesNothing: a read-only store reads a database that no
// process has open (no -wal, no -shm) without creating or changing any
// file, and its methods that write refuse with ErrReadOnlyStore.
func TestReadOnlyCreatesNothing(t *testing.T) {
	path := seedDB(t)
	dir := filepath.Dir(path)
	before := storetest.Files(t, dir)
	if len(before) != 1 {
		t.Fatalf("a closed database left %v", before)
	}
	ctx := context.Background()
	s := openRO(t, path)

	c, err := s.Load(ctx, "+14155551234")
	if err != nil || len(c.Turns) != 1 || c.Turns[0].Messages[0].Text() != "hi" || !c.LastActive.Equal(storetest.Start) {
		t.Errorf("Load = %+v, %v; want the saved turn", c, err)
	}
	if _, err := s.Load(ctx, "+19999999999"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Load of an unknown phone: %v, want ErrNotFound", err)
	}
	if sums, err := s.List(ctx); err != nil || len(sums) != 1 || sums[0].Turns != 1 {
		t.Errorf("List = %+v, %v", sums, err)
	}
	if days, err := s.UsageSince(ctx, time.Time{}); err != nil || len(days) != 1 || days[0].InputTokens != 10 {
		t.Errorf("UsageSince = %+v, %v", days, err)
	}
	if m, err := s.RecallMessage(ctx, "+14155551234", "wamid.1", storetest.Start); err != nil || m.Text != "hi" {
		t.Errorf("RecallMessage = %+v, %v", m, err)
	}

	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	turn := conversation.Turn{Messages: storetest.TextTurn("a", "b")}
	for name, write := range map[string]func() error{
		"Append": func() error { return s.Append(ctx, "+1", turn, storetest.Start, lim) },
		"Delete": func() error { return s.Delete(ctx, "+14155551234") },
		"Expire": func() error { return s.Expire(ctx, "+14155551234", storetest.Start) },
		"Sweep":  func() error { _, err := s.Sweep(ctx, storetest.Start); return err },
		"Replace": func() error {
			_, err := s.Replace(ctx, conversation.Conversation{Phone: "+1", LastActive: storetest.Start}, time.Hour)
			return err
		},
		"AddUsage": func() error { return s.AddUsage(ctx, "+1", storetest.Start, conversation.Usage{Messages: 1}) },
		"RememberMessages": func() error {
			return s.RememberMessages(ctx, "+1", storetest.Start, conversation.RecentMessage{ID: "x", Role: conversation.RoleUser, Text: "x", At: storetest.Start})
		},
		"ForgetMessages": func() error { return s.ForgetMessages(ctx, "+14155551234") },
	} {
		if err := write(); !errors.Is(err, sqlite.ErrReadOnlyStore) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnlyStore", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Error("List on a closed read-only store succeeded")
	}
	storetest.SameFiles(t, dir, before, "a read-only store")
}

// TestReadOnlyMissing: a missing database is an error wrapping
// fs.ErrNotExist, and nothing is created, not even the folder.
func TestReadOnlyMissing(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "typo.db"), filepath.Join(dir, "no", "such", "folder.db")} {
		s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no database at") {
			t.Errorf("Open(%s, ReadOnly) = %v, want an error wrapping fs.ErrNotExist", path, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Open(%s, ReadOnly) created %s", path, entries[0].Name())
		}
	}
}

// TestReadOnlyDamaged: a file that is not a database, or a database that is
// damaged, is reported with an error wrapping ErrCorrupt, by Open or by the
// first read that meets the damage, and is left as it is; an empty file is
// a database without mombot's tables.
func TestReadOnlyDamaged(t *testing.T) {
	good, err := os.ReadFile(seedDB(t))
	if err != nil {
		t.Fatal(err)
	}
	// The second page onwards holds the tables; overwrite them.
	scribbled := slices.Clone(good)
	for i := 4096; i < len(scribbled); i++ {
		scribbled[i] = 0x5a
	}
	for _, tt := range []struct {
		name    string
		content []byte
		want    error
		words   string
	}{
		{"a text file", []byte("this is not a database\n"), sqlite.ErrCorrupt, "is not an SQLite database"},
		{"a JSON store given as sqlite:", []byte(`{"+14155551234": {"messages": [], "last_active": "2026-01-01T00:00:00"}}`), sqlite.ErrCorrupt, "is not an SQLite database"},
		{"the first 100 bytes", good[:100], sqlite.ErrCorrupt, "damaged"},
		{"half a database", good[:len(good)/2], sqlite.ErrCorrupt, "damaged"},
		{"pages overwritten", scribbled, sqlite.ErrCorrupt, "damaged"},
		{"0 bytes", nil, sqlite.ErrSchemaTooOld, "the database is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mombot.db")
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			before := storetest.Files(t, dir)
			err := readAll(path)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.words) {
				t.Errorf("reading %s: %v; want an error wrapping %v saying %q", tt.name, err, tt.want, tt.words)
			}
			storetest.SameFiles(t, dir, before, "reading "+tt.name)
		})
	}
}

// readAll opens path read-only and reads everything in it, returning the
// first error.
func readAll(path string) error {
	s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	sums, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, sum := range sums {
		if _, err := s.Load(ctx, sum.Phone); err != nil {
			return err
		}
	}
	_, err = s.UsageSince(ctx, time.Time{})
	return err
}

// roChildEnv, when set, makes TestReadOnlyWhileWriting the writer child: its
// value is the database's path. It saves a turn for each line it reads and
// answers "saved N", N being the number of the writer's turns; at the end of its input it closes the store.
const roChildEnv = "MOMBOT_SQLITE_TEST_RO_WRITER"

// writerPhone is the conversation the writer child saves to.
const writerPhone = "+14155550000"

// roWriter is the child writing while the test reads.
type roWriter struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startWriter(t *testing.T, path string) *roWriter {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyWhileWriting$", "-test.count=1")
	cmd.Env = append(os.Environ(), roChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &roWriter{cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// save has the writer save its next turn and waits until it is committed.
func (w *roWriter) save(t *testing.T, n int) {
	t.Helper()
	fmt.Fprintln(w.in, "save")
	if !w.out.Scan() || w.out.Text() != fmt.Sprintf("saved %d", n) {
		t.Fatalf("writer: %q, %v; want saved %d", w.out.Text(), w.out.Err(), n)
	}
}

func runWriter(t *testing.T, path string) {
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	mem, err := conversation.New(s, &conversation.Options{MaxTurns: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// Turns are numbered on from those a writer before saved.
	c, err := s.Load(context.Background(), writerPhone)
	if err != nil && !errors.Is(err, conversation.ErrNotFound) {
		t.Fatal(err)
	}
	in := bufio.NewScanner(os.Stdin)
	for n := len(c.Turns) + 1; in.Scan(); {
		if in.Text() == "reopen" {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = sqlite.Open(path, nil); err != nil {
				t.Fatal(err)
			}
			if mem, err = conversation.New(s, &conversation.Options{MaxTurns: 1000}); err != nil {
				t.Fatal(err)
			}
			fmt.Println("reopened")
			continue
		}
		if err := mem.SaveTurn(context.Background(), writerPhone, storetest.TextTurn(fmt.Sprintf("turn %d", n), "ok")); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("saved %d\n", n)
		n++
	}
}

// TestReadOnlyWhileWriting: while another process has the database open
// and writes (as mombot serve does), its -wal and -shm exist, and a
// read-only store reads through them every turn committed so far, without
// changing them. When the writer exits, it removes them as usual: the
// reader holds nothing open between operations. A writer killed with its
// turns still in the -wal leaves both files, and a read-only store reads
// those turns from them without recovering or changing them.
func TestReadOnlyWhileWriting(t *testing.T) {
	if path := os.Getenv(roChildEnv); path != "" {
		runWriter(t, path)
		return
	}
	ctx := context.Background()
	path := seedDB(t)
	dir := filepath.Dir(path)
	turns := func(t *testing.T, s *sqlite.Store) int {
		t.Helper()
		c, err := s.Load(ctx, writerPhone)
		if err != nil {
			t.Fatalf("Load of the writer's conversation: %v", err)
		}
		for i, tr := range c.Turns {
			if got, want := tr.Messages[0].Text(), fmt.Sprintf("turn %d", i+1); got != want {
				t.Fatalf("the writer's turn %d reads %q, want %q", i+1, got, want)
			}
		}
		return len(c.Turns)
	}

	t.Run("writer running", func(t *testing.T) {
		w := startWriter(t, path)
		w.save(t, 1)
		if _, err := os.Stat(path + "-shm"); err != nil {
			t.Fatalf("the writer has no -shm: %v", err)
		}
		s := openRO(t, path) // held across the writer's saves
		for n := 1; n <= 3; n++ {
			if n > 1 {
				w.save(t, n)
			}
			before := storetest.Files(t, dir)
			if got := turns(t, s); got != n {
				t.Fatalf("after the writer's save %d the reader sees %d turns", n, got)
			}
			if sums, err := s.List(ctx); err != nil || len(sums) != 2 || sums[0].Phone != writerPhone || sums[0].Turns != n {
				t.Fatalf("List after save %d = %+v, %v", n, sums, err)
			}
			storetest.SameFiles(t, dir, before, "reading while the writer runs")
		}
		w.in.Close()
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
		if got := slices.Sorted(maps.Keys(storetest.Files(t, dir))); len(got) != 1 {
			t.Fatalf("after the writer closed with a reader open: %v; want the database alone", got)
		}
		if got := turns(t, s); got != 3 {
			t.Fatalf("after the writer closed the reader sees %d turns, want 3", got)
		}
	})

	t.Run("writer killed", func(t *testing.T) {
		w := startWriter(t, path)
		for n := 4; n <= 5; n++ {
			w.save(t, n)
		}
		w.cmd.Process.Kill()
		w.cmd.Wait()
		before := storetest.Files(t, dir)
		if _, ok := before["mombot.db-wal"]; !ok {
			t.Fatalf("a killed writer left no -wal: %v", before)
		}
		s := openRO(t, path)
		if got := turns(t, s); got != 5 {
			t.Fatalf("after a killed writer's 2 more saves the reader sees %d turns, want 5", got)
		}
		storetest.SameFiles(t, dir, before, "reading after a killed writer")

		// Without the -shm, the -wal's commits cannot be read without
		// writing one: that is said, and nothing is created.
		if err := os.Remove(path + "-shm"); err != nil {
			t.Fatal(err)
		}
		before = storetest.Files(t, dir)
		_, err := s.Load(ctx, writerPhone)
		if err == nil || !strings.Contains(err.Error(), "-shm is missing") || !strings.Contains(err.Error(), "recovers them") {
			t.Errorf("Load with a -wal and no -shm: %v; want it said", err)
		}
		s.Close()
		storetest.SameFiles(t, dir, before, "reading a -wal without its -shm")
	})
}

// TestReadOnlyConcurrent: goroutines reading one read-only store while
// another process saves, closes and opens the database again (so that the
// reads go from the -wal to the main file and back), and finally closes
// it, never fail and never see a conversation shrink: each read sees a
// committed state at least as new as the one before it.
func TestReadOnlyConcurrent(t *testing.T) {
	ctx := context.Background()
	path := seedDB(t)
	r := openRO(t, path)
	w := startWriter(t, path)
	const saves = 20
	done := make(chan struct{})
	var wg sync.WaitGroup
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop() // also when the test fails early
	for range 3 {
		wg.Go(func() {
			seen := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				c, err := r.Load(ctx, writerPhone)
				if errors.Is(err, conversation.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("Load: %v", err)
					return
				}
				if len(c.Turns) < seen {
					t.Errorf("a read saw %d turns after one saw %d", len(c.Turns), seen)
					return
				}
				seen = len(c.Turns)
			}
		})
	}
	for n := 1; n <= saves; n++ {
		w.save(t, n)
		if n%10 == 0 {
			fmt.Fprintln(w.in, "reopen")
			if !w.out.Scan() || w.out.Text() != "reopened" {
				t.Fatalf("writer: %q, %v; want reopened", w.out.Text(), w.out.Err())
			}
		}
	}
	w.in.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	c, err := r.Load(ctx, writerPhone)
	stop()
	if err != nil || len(c.Turns) != saves {
		t.Fatalf("after the writer closed: %d turns, %v; want %d", len(c.Turns), err, saves)
	}
}
