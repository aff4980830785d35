package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
)

var kills = flag.Int("sqlite.kills", 50, "writers TestKilledWriter kills")

// killChildEnv, when set, makes TestKilledWriter the writer: its value is
// "FIRST:PATH", FIRST being the index of the first write it makes.
const killChildEnv = "MOMBOT_SQLITE_KILL_CHILD"

// killWrite returns the i-th write of the killed writers' sequence: a new
// value for one of 16 keys, of 0 to 3 pages, or every fifth a delete.
func killWrite(i int) (key, data string, del bool) {
	key = fmt.Sprintf("k%02d", i*7%16)
	if i%5 == 4 {
		return key, "", true
	}
	return key, fmt.Sprintf(`{"write":%d,"pad":%q}`, i, strings.Repeat("x", i%4*3000)), false
}

// killState returns the records after the first n writes.
func killState(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		key, data, del := killWrite(i)
		if del {
			delete(m, key)
		} else {
			m[key] = data
		}
	}
	return m
}

// TestKilledWriter kills writers with SIGKILL at random moments (while
// the database is created, opened, written or closed) and, at once after
// each kill, opens the database read-only: it must open and read, and hold
// every write a writer acknowledged (the one in flight may be there or
// not). Each writer goes on from the state the reader saw, so the kills
// also test that a writer recovers what the last one left.
func TestKilledWriter(t *testing.T) {
	if v := os.Getenv(killChildEnv); v != "" {
		runKilledWriter(v)
		return
	}
	if testing.Short() {
		t.Skip("kills writers for a few seconds")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "mombot.db")
	next := 0 // the writes done so far
	var acked, inFlight, walLeft, walHeader int
	for kill := range *kills {
		w := startKilledWriter(t, next, path)
		if rand.IntN(4) == 0 {
			// Any moment from the start: the process starting, the
			// database created or opened.
			time.Sleep(time.Duration(rand.Int64N(int64(30 * time.Millisecond))))
		} else {
			// While it writes, opens and closes.
			<-w.first
			time.Sleep(time.Duration(rand.Int64N(int64(40 * time.Millisecond))))
		}
		w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		if w.cmd.Wait(); !w.cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("kill %d: the writer ended before it was killed: %v", kill, w.cmd.ProcessState)
		}
		n := next + w.acks
		acked += w.acks
		if fi, err := os.Stat(path + "-wal"); err == nil {
			walLeft++
			if fi.Size() == 32 {
				walHeader++
			}
		}

		s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
		if errors.Is(err, fs.ErrNotExist) && n == 0 {
			continue // killed before it created the file
		}
		if err != nil {
			t.Fatalf("kill %d, after %d writes: Open read-only: %v", kill, n, err)
		}
		recs, err := s.List(ctx, kind, "")
		if err != nil {
			t.Fatalf("kill %d, after %d writes: List: %v", kill, n, err)
		}
		got := map[string]string{}
		for _, r := range recs {
			got[r.Key] = string(r.Data)
		}
		switch {
		case maps.Equal(got, killState(n)):
		case maps.Equal(got, killState(n+1)):
			n++ // the write in flight was committed
			inFlight++
		default:
			t.Fatalf("kill %d: after %d acknowledged writes the reader sees %v, want %v", kill, n, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(killState(n))))
		}
		for key, data := range got {
			if r, err := s.Get(ctx, kind, key); err != nil || string(r.Data) != data {
				t.Fatalf("kill %d: Get(%s) = %.40q, %v; List gave %.40q", kill, key, r.Data, err, data)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Having recovered the writer's -wal, the reader was the last
		// connection and removed it.
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("kill %d: after the reader closed: %v, want the database alone", kill, entries)
		}
		next = n
	}
	t.Logf("%d kills, %d writes acknowledged, %d found committed while in flight; %d kills left a -wal, %d of them its 32-byte header alone",
		*kills, acked, inFlight, walLeft, walHeader)
}

// killedWriter is a writer process and what it acknowledged.
type killedWriter struct {
	cmd   *exec.Cmd
	first chan struct{} // closed at its first acknowledgement, or at its end
	done  chan struct{} // closed when its acknowledgements end
	acks  int           // valid once done is closed
}

func startKilledWriter(t *testing.T, first int, path string) *killedWriter {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", killChildEnv, first, path))
	cmd.ExtraFiles = []*os.File{w} // fd 3: a line per acknowledged write
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	kw := &killedWriter{cmd: cmd, first: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(kw.done)
		defer r.Close()
		firstOnce := sync.OnceFunc(func() { close(kw.first) })
		defer firstOnce()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if sc.Text() != strconv.Itoa(first+kw.acks) {
				t.Errorf("writer acknowledged %q, want %d", sc.Text(), first+kw.acks)
			}
			kw.acks++
			firstOnce()
		}
	}()
	return kw
}

// runKilledWriter is the writer: it makes the writes from the first on,
// opening and closing the store every few writes, and writes the index of
// each on fd 3 once it returned, until it is killed.
func runKilledWriter(arg string) {
	firstArg, path, _ := strings.Cut(arg, ":")
	i, err := strconv.Atoi(firstArg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad %s=%q\n", killChildEnv, arg)
		os.Exit(2)
	}
	acks := os.NewFile(3, "acks")
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "killed writer:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		s, err := sqlite.Open(path, &sqlite.Options{Logger: quiet})
		if err != nil {
			fail(err)
		}
		for range rand.IntN(8) {
			key, data, del := killWrite(i)
			if del {
				if err := s.Delete(ctx, kind, key, 0); err != nil && !errors.Is(err, conversation.ErrNotFound) {
					fail(err)
				}
			} else {
				r, err := s.Get(ctx, kind, key)
				if err != nil && !errors.Is(err, conversation.ErrNotFound) {
					fail(err)
				}
				if _, err := s.Put(ctx, kind, conversation.Record{Key: key, Data: []byte(data), Version: r.Version}, 0); err != nil {
					fail(err)
				}
			}
			fmt.Fprintln(acks, i)
			i++
		}
		if err := s.Close(); err != nil {
			fail(err)
		}
	}
	os.Exit(0)
}
