package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// TestServeKilledWhileAnswering kills mombot serve (SIGKILL) while the
// model is still working on a message whose delivery was acknowledged with
// 200, which Meta therefore never delivers again. The next process on the
// same data folder, or the same Redis, answers it, once, and stores the
// turn once.
func TestServeKilledWhileAnswering(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		testKilledWhileAnswering(t, "file:"+filepath.Join(dir, "conversations.json"), filepath.Join(dir, "whatsapp-inbox.json"))
	})
	t.Run("redis", func(t *testing.T) {
		// The dead process's sender lock holds for its TTL, 30s, before
		// the next one may answer.
		testKilledWhileAnswering(t, redisStoreURL(t), "")
	})
}

// testKilledWhileAnswering runs the test on store; inbox is the queue file
// that holds the message meanwhile, "" when the queue is in Redis.
func testKilledWhileAnswering(t *testing.T, store, inbox string) {
	f := newServeFixture(t, store, map[string]string{erin: "Erin"})

	// The fake Messages API holds its first request until the test ends;
	// it answers the others at once with the marker of their message.
	asked, hold := make(chan struct{}), make(chan struct{})
	var first sync.Once
	var calls atomic.Int32
	f.claude.Respond(func(r anthropictest.Request) anthropictest.Response {
		calls.Add(1)
		held := false
		first.Do(func() { held = true })
		if held {
			close(asked)
			<-hold
			return anthropictest.Text("re held")
		}
		key := "none"
		if n := len(r.Params.Messages); n > 0 {
			if m := markerRE.FindSubmatch(r.Params.Messages[n-1]); m != nil {
				key = string(m[1])
			}
		}
		return anthropictest.Text("re " + key)
	})
	// Registered after the fixture, so it runs before the fake closes,
	// which waits for the held request.
	t.Cleanup(func() { close(hold) })

	run := time.Now().UnixNano()
	msg := func(key string) []byte {
		return webhookPayload(inMessage{From: erinWaID, ID: fmt.Sprintf("wamid.crash.%d.%s", run, key), Text: "[k=" + key + "] remind me"})
	}
	p := f.start()
	if code := p.deliver(msg("c1")); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked:\n%s", p.logs.String())
	}
	p.kill()
	if n := len(f.graph.Sent()); n != 0 {
		t.Fatalf("%d replies sent before the kill", n)
	}
	if inbox != "" {
		data, err := os.ReadFile(inbox)
		if err != nil {
			t.Fatalf("no inbox file next to the conversations: %v", err)
		}
		if !strings.Contains(string(data), fmt.Sprintf("wamid.crash.%d.c1", run)) {
			t.Fatalf("the acknowledged message is not in the inbox file:\n%s", data)
		}
		if fi, _ := os.Stat(inbox); fi.Mode().Perm() != 0o600 {
			t.Errorf("inbox file mode %v, want 0600", fi.Mode().Perm())
		}
	}

	// A new process on the same folder or Redis answers what the first
	// left.
	p = f.start()
	sent := waitSent(t, f.graph, 1, 90*time.Second)
	if sent[0].To != erinWaID || sent[0].Body != "re c1" {
		t.Fatalf("reply after the restart: %+v, want %q to %s", sent[0], "re c1", erinWaID)
	}
	// Meta's redelivery of it, if any, is not answered again; the next
	// message comes after it.
	if code := p.deliver(msg("c1")); code != 200 {
		t.Errorf("redelivery: %d", code)
	}
	p.deliver(msg("c2"))
	waitSent(t, f.graph, 2, 30*time.Second)
	p.stop()

	var bodies []string
	for _, m := range f.graph.Sent() {
		bodies = append(bodies, m.Body)
	}
	if want := []string{"re c1", "re c2"}; !slices.Equal(bodies, want) {
		t.Errorf("replies %q, want %q", bodies, want)
	}
	var hist []json.RawMessage
	if err := json.Unmarshal([]byte(f.mombot("history", "show", "--json", erin)), &hist); err != nil {
		t.Fatal(err)
	}
	if got, want := markers(hist), []string{"c1", "c2"}; !slices.Equal(got, want) {
		t.Errorf("stored user messages %q, want each once", got)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the model was asked %d times, want 3 (the one cut off, c1 again, c2)", n)
	}
	if inbox != "" {
		// The file keeps the ids of the messages handled, for duplicates;
		// its queues must be empty.
		q, err := delivery.OpenFile(inbox, &delivery.FileOptions{Logger: quietEnv().log})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		if left, err := q.Keys(context.Background()); err != nil || len(left) > 0 {
			t.Errorf("messages left in the inbox file of %q (%v)", left, err)
		}
	}
	logs := p.logs.String()
	for _, want := range []string{"answering the messages left queued", "duplicate delivery skipped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log of the restarted process lacks %q", want)
		}
	}
}

// TestServeListenFailsStillAnswersTheInbox: a serve that cannot listen
// exits with an error, but only once it has answered the message an
// earlier process left in the inbox, which it had started on.
func TestServeListenFailsStillAnswersTheInbox(t *testing.T) {
	dir := t.TempDir()
	f := newServeFixture(t, "file:"+filepath.Join(dir, "conversations.json"), map[string]string{erin: "Erin"})
	echoMarkers(f.claude, 100*time.Millisecond)
	ev := map[string]any{
		"PhoneNumberID": graphtest.PhoneNumberID, "ID": fmt.Sprintf("wamid.listen.%d", time.Now().UnixNano()),
		"From": erin, "WaID": erinWaID, "Time": time.Now(), "Type": "text", "Text": "[k=left] hello",
	}
	// As v0.1.0 and later write it: the event in an envelope.
	inbox, _ := json.Marshal(map[string]any{"queues": map[string]any{erin: []any{map[string]any{"id": ev["ID"], "key": erin, "body": ev}}}})
	if err := os.WriteFile(filepath.Join(dir, "whatsapp-inbox.json"), inbox, 0o600); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cmd := exec.Command(f.bin, "serve", "--listen", taken.Addr().String(), "--config", f.config)
	cmd.Env = f.env()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve on a port in use succeeded:\n%s", out)
	}
	if got := f.graph.Sent(); len(got) != 1 || got[0].Body != "re left" {
		t.Errorf("sent %+v before exiting, want the inbox's message answered:\n%s", got, out)
	}
}
