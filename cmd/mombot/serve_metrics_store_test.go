package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMetricsKeepsTheStore answers messages through mombot serve with
// --metrics-listen on every store and checks that what the store keeps
// besides the conversations still reaches the assistant through the
// metrics: the usage ledger counts every message answered, and a reply
// quoting an earlier message, mombot's or the person's own, brings the
// quoted text to the model.
func TestServeMetricsKeepsTheStore(t *testing.T) {
	stores := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"json file", func(t *testing.T) string { return "file:" + filepath.Join(t.TempDir(), "conversations.json") }},
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "mombot.db") }},
		{"redis", func(t *testing.T) string { return redisStoreURL(t) }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			f := newServeFixture(t, s.url(t), map[string]string{erin: "Erin"})
			echoMarkers(f.claude, 0)
			p := f.start("--metrics-listen", "127.0.0.1:0")
			if metricsAddrRE.FindStringSubmatch(p.logs.String()) == nil {
				t.Fatalf("no metrics served:\n%s", p.logs.String())
			}

			run := time.Now().UnixNano()
			n := 0
			// send delivers one text from Erin, quoting the message of id
			// replyTo unless it is empty, waits for the reply and returns
			// the last user message the model got for it and the reply.
			send := func(text, replyTo string) (string, string, string) {
				t.Helper()
				n++
				id := fmt.Sprintf("wamid.metricsstore.%d.%d", run, n)
				fields := map[string]any{"type": "text", "text": map[string]any{"body": text}}
				if replyTo != "" {
					fields["context"] = map[string]any{"from": "15550783881", "id": replyTo}
				}
				before := len(f.graph.Sent())
				if code := p.deliver(metaMessage(erinWaID, id, time.Now(), fields)); code != 200 {
					t.Fatalf("delivery: %d", code)
				}
				sent := waitSent(t, f.graph, before+1, 20*time.Second)
				reqs := f.claude.Requests()
				msgs := reqs[len(reqs)-1].Params.Messages
				return id, string(msgs[len(msgs)-1]), sent[len(sent)-1].ID
			}

			first, _, reply := send("[k=m1] is the bake sale on Friday?", "")
			_, got, _ := send("[k=m2] and what time?", reply)
			if want := `[Replying to your message: \"re m1\"]`; !strings.Contains(got, want) {
				t.Errorf("a reply quoting mombot's answer: the model got %s\nwant it to hold %s", got, want)
			}
			_, got, _ = send("[k=m3] I meant this one", first)
			if want := `[Replying to: \"[k=m1] is the bake sale on Friday?\"]`; !strings.Contains(got, want) {
				t.Errorf("a reply quoting Erin's own message: the model got %s\nwant it to hold %s", got, want)
			}
			p.stop()

			out := f.mombot("usage", "--json", "--full")
			var r struct {
				People []struct {
					Phone    string `json:"phone"`
					Messages int64  `json:"messages"`
					Calls    int64  `json:"api_calls"`
				} `json:"people"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("usage --json: %v\n%s", err, out)
			}
			if len(r.People) != 1 || r.People[0].Phone != erin || r.People[0].Messages != 3 || r.People[0].Calls != int64(len(f.claude.Requests())) {
				t.Errorf("usage after 3 messages answered with %d API calls: %s", len(f.claude.Requests()), out)
			}
		})
	}
}
