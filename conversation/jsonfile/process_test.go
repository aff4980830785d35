package jsonfile_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

// The tests below run this test binary again as a child process that saves
// turns; the environment tells the child what to do.
const (
	envChild = "MOMBOT_JSONFILE_CHILD" // "saver"
	envPath  = "MOMBOT_JSONFILE_PATH"
	envPhone = "MOMBOT_JSONFILE_PHONES" // comma-separated phones to save to, round robin
	envCount = "MOMBOT_JSONFILE_COUNT"  // turns to save; 0 is until killed
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "saver" {
		os.Exit(saver())
	}
	os.Exit(m.Run())
}

// saver saves turns "<phone> <n>", adds a message to the phone's usage,
// and prints n on its own line once both have returned: a printed number is
// an acknowledged turn and message.
func saver() int {
	s, err := jsonfile.Open(os.Getenv(envPath), &jsonfile.Options{Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mem, _ := conversation.New(s, &conversation.Options{MaxTurns: 1 << 20})
	phones := strings.Split(os.Getenv(envPhone), ",")
	count, _ := strconv.Atoi(os.Getenv(envCount))
	out := bufio.NewWriter(os.Stdout)
	for n := 0; count == 0 || n < count; n++ {
		phone := phones[n%len(phones)]
		if err := mem.SaveTurn(ctx, phone, storetest.TextTurn(fmt.Sprintf("%s %d", phone, n), "ok")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := mem.AddUsage(ctx, phone, usageDay, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, OutputTokens: 10}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, n)
		out.Flush()
	}
	return 0
}

// usageDay is the day of every usage the children add.
var usageDay = time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)

func child(t *testing.T, path, phones string, count int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=saver", envPath+"="+path, envPhone+"="+phones, envCount+"="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	return cmd
}

// turnsOf returns the user texts of phone's stored turns.
func turnsOf(t *testing.T, path, phone string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	c, err := reopen(t, path).Load(ctx, phone)
	if err != nil {
		return got
	}
	for _, turn := range c.Turns {
		got[turn.Messages[0].Text()] = true
	}
	return got
}

// TestCrashDuringSaves kills a saving process with SIGKILL at random moments,
// over and over, and checks after each kill that the file loads and holds
// every turn the process acknowledged.
func TestCrashDuringSaves(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 20
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	acked := map[string][]string{} // phone -> acknowledged turn texts
	for run := range runs {
		phone := fmt.Sprintf("+1555%04d", run%25) // phones come back, files grow
		cmd := child(t, path, phone, 0)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill at a random moment after the first acknowledgement, so the
		// kill lands in the middle of saves rather than in start-up.
		first, ok := <-lines
		if !ok {
			t.Fatalf("run %d: the child acknowledged nothing", run)
		}
		acks := []string{first}
		timer := time.After(time.Duration(rand.IntN(15000)) * time.Microsecond)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break wait
				}
				acks = append(acks, l)
			case <-timer:
				cmd.Process.Signal(syscall.SIGKILL)
				timer = nil
			}
		}
		cmd.Wait()
		for _, n := range acks {
			acked[phone] = append(acked[phone], fmt.Sprintf("%s %s", phone, n))
		}
		if aside, _ := filepath.Glob(filepath.Join(dir, "*.corrupt-*")); len(aside) > 0 {
			t.Fatalf("run %d: a file was left unreadable: %v", run, aside)
		}
		stored := turnsOf(t, path, phone)
		for _, text := range acked[phone] {
			if !stored[text] {
				t.Fatalf("run %d: acknowledged turn %q is missing after SIGKILL", run, text)
			}
		}
	}
	// Every phone's acknowledged turns, not only the last run's, are there.
	for phone, texts := range acked {
		stored := turnsOf(t, path, phone)
		for _, text := range texts {
			if !stored[text] {
				t.Fatalf("acknowledged turn %q is missing at the end", text)
			}
		}
		if n := messagesCounted(t, path, phone); n < int64(len(texts)) {
			t.Fatalf("%s: the usage counts %d messages, %d were acknowledged", phone, n, len(texts))
		}
	}
	if temps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(temps) > 0 {
		t.Fatalf("temporary files of killed writers were left after a restart: %v", temps)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills, file of %d bytes", runs, fi.Size())
}

// TestTwoProcessesLoseNoUpdate has two processes save into the same file at
// once, to one shared phone and one of their own.
func TestTwoProcessesLoseNoUpdate(t *testing.T) {
	const each = 40
	path := filepath.Join(t.TempDir(), "conversations.json")
	a := child(t, path, "+shared,+alice", each)
	b := child(t, path, "+shared,+bob", each)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("process a: %v", err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("process b: %v", err)
	}
	for phone, want := range map[string]int{"+shared": each, "+alice": each / 2, "+bob": each / 2} {
		if got := countTurns(t, path, phone); got != want {
			t.Errorf("%s has %d turns, want %d: an update was lost", phone, got, want)
		}
		if got := messagesCounted(t, path, phone); got != int64(want) {
			t.Errorf("%s's usage counts %d messages, want %d: an addition was lost", phone, got, want)
		}
	}
}

func countTurns(t *testing.T, path, phone string) int {
	t.Helper()
	c, err := reopen(t, path).Load(ctx, phone)
	if err != nil {
		t.Fatalf("load %s: %v", phone, err)
	}
	return len(c.Turns)
}

// messagesCounted returns the messages phone's usage counts.
func messagesCounted(t *testing.T, path, phone string) int64 {
	t.Helper()
	days, err := reopen(t, path).UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range days {
		if d.Phone == phone {
			return d.Usage.Messages
		}
	}
	return 0
}

// reopen opens the store at path afresh, as a process that starts does.
func reopen(t *testing.T, path string) *conversation.Memory {
	t.Helper()
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	mem, _ := conversation.New(s, &conversation.Options{Timeout: 1 << 62, MaxTurns: 1 << 20})
	return mem
}
