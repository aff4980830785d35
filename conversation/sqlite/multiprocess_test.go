package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// childEnv, when set, makes TestMultiProcess the child writer: its value is
// "ID:PAUSE:PATH", PAUSE being the pause between two saves.
const childEnv = "MOMBOT_SQLITE_TEST_CHILD"

const (
	children    = 2
	childSaves  = 100
	sharedPhone = "+19999999999"
)

func childPhone(id int) string { return fmt.Sprintf("+1000000000%d", id) }

// TestMultiProcess runs two processes on one database file, each saving turns
// for a phone of its own and for a phone both share, at the same time. No
// turn may be lost and each process's turns keep their order. Both start on
// a new file and set up its schema at once: one does, the other finds it
// done. In a burst the processes save back to back, and one mostly waits
// for the other, on SQLite's lock or a conflicting version; paced, as in
// real use, where a model call separates the saves of a conversation, their
// turns interleave.
func TestMultiProcess(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		runChild(t, v)
		return
	}
	for _, tt := range []struct {
		name  string
		pause time.Duration
	}{
		{"burst", 0},
		{"paced", 2 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) { testMultiProcess(t, tt.pause) })
	}
}

func testMultiProcess(t *testing.T, pause time.Duration) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	type child struct {
		cmd   *exec.Cmd
		out   bytes.Buffer
		start *os.File
	}
	var procs []*child
	for id := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1", "-test.v")}
		c.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s:%s", childEnv, id, pause, path))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c.cmd.Stdin, c.start = r, w
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		procs = append(procs, c)
	}
	// Both are running: let them go at once.
	for _, c := range procs {
		fmt.Fprintln(c.start, "go")
		c.start.Close()
	}
	for id, c := range procs {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", id, err, c.out.String())
		}
	}
	if t.Failed() {
		return
	}

	ctx := context.Background()
	s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, err := conversation.New(s, &conversation.Options{MaxTurns: 10 * children * childSaves})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := mem.Load(ctx, sharedPhone)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(shared.Turns), children*childSaves; got != want {
		t.Fatalf("shared phone has %d turns, want %d: turns were lost", got, want)
	}
	next := make([]int, children) // the next save expected of each child
	switches, prev := 0, -1
	for i, tr := range shared.Turns {
		var id, n int
		if _, err := fmt.Sscanf(tr.Messages[0].Text(), "child %d save %d", &id, &n); err != nil {
			t.Fatalf("shared turn %d: %v", i, err)
		}
		if n != next[id] {
			t.Fatalf("shared turn %d is child %d's save %d, want its save %d", i, id, n, next[id])
		}
		next[id]++
		if prev >= 0 && id != prev {
			switches++
		}
		prev = id
	}
	// Evidence that the processes ran at the same time, not one after the other.
	t.Logf("the shared phone's turns switch between processes %d times", switches)
	for id := range children {
		c, err := mem.Load(ctx, childPhone(id))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Turns) != childSaves {
			t.Fatalf("child %d's phone has %d turns, want %d", id, len(c.Turns), childSaves)
		}
		for n, tr := range c.Turns {
			if got, want := tr.Messages[0].Text(), fmt.Sprintf("child %d save %d", id, n); got != want {
				t.Fatalf("child %d's turn %d = %q, want %q", id, n, got, want)
			}
		}
	}
}

// runChild is the child's part: wait for the parent's word, then save to the
// shared phone and to its own from two goroutines, pausing between saves.
func runChild(t *testing.T, arg string) {
	f := strings.SplitN(arg, ":", 3)
	if len(f) != 3 {
		t.Fatalf("bad %s=%q", childEnv, arg)
	}
	id, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatalf("bad %s=%q", childEnv, arg)
	}
	pause, err := time.ParseDuration(f[1])
	if err != nil {
		t.Fatalf("bad %s=%q", childEnv, arg)
	}
	path := f[2]
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start: %v", err)
	}
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, err := conversation.New(s, &conversation.Options{MaxTurns: 10 * children * childSaves})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, phone := range []string{sharedPhone, childPhone(id)} {
		wg.Go(func() {
			for n := range childSaves {
				text := fmt.Sprintf("child %d save %d", id, n)
				if err := mem.SaveTurn(context.Background(), phone, storetest.TextTurn(text, "ok")); err != nil {
					t.Errorf("SaveTurn(%s, %q): %v", phone, text, err)
					return
				}
				time.Sleep(pause)
			}
		})
	}
	wg.Wait()
}
