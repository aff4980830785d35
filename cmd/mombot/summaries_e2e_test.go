package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/usage"
)

// fakeSummarizer answers the summarizer's requests (the model
// memory.summary_model names) for the end-to-end tests, deterministically:
// the summary so far, then a line "- " for each of the person's messages in
// the turns to fold, the last summaryLines of them. It reads the request as
// the summarizer writes it (assistant/summarize.go).
func fakeSummarizer(r anthropictest.Request) anthropictest.Response {
	prompt := summarizerPrompt(r)
	_, rest, _ := strings.Cut(prompt, "\nSummary so far:\n")
	previous, turns, _ := strings.Cut(rest, "\nTurns to fold in, oldest first:\n")
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(previous), "\n") {
		if l != "" && l != "(none)" {
			lines = append(lines, l)
		}
	}
	for l := range strings.SplitSeq(turns, "\n") {
		if said, ok := strings.CutPrefix(l, "Person: "); ok {
			lines = append(lines, "- "+said)
		}
	}
	if len(lines) > summaryLines {
		lines = lines[len(lines)-summaryLines:]
	}
	if len(lines) == 0 {
		lines = []string{"- nothing to keep"}
	}
	return anthropictest.Text(strings.Join(lines, "\n"))
}

// summaryLines bounds fakeSummarizer's summaries.
const summaryLines = 8

// summarizerPrompt returns the text of a summarizer's request: its one
// user message's text blocks.
func summarizerPrompt(r anthropictest.Request) string {
	if len(r.Params.Messages) != 1 {
		return ""
	}
	var m struct {
		Content []struct{ Type, Text string }
	}
	if json.Unmarshal(r.Params.Messages[0], &m) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// TestSummariesE2E: running summaries and notes through mombot ask and
// mombot chat, one process per message as a person would run them, on
// the file, SQLite, Redis and PostgreSQL stores. Erin talks and writes a
// note; her conversation expires; her next message (ask, or chat's first)
// folds the turns with the summary model first, and its request shows the
// summary after the notes. Jason's requests show the family's note, never Erin's
// summary. Once Jason forgets the note, no request holds its text, and
// mombot usage prices the summarizer's calls at Haiku's prices.
func TestSummariesE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs mombot")
	}
	bin := buildMombot(t)
	for _, tt := range []struct {
		name, store string
		chat        bool
	}{
		{"AskFile", "file", false},
		{"AskSQLite", "sqlite", false},
		{"AskRedis", "redis", false},
		{"AskPostgres", "postgres", false},
		{"ChatFile", "file", true},
		{"ChatSQLite", "sqlite", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newAskFixture(t, bin)
			switch tt.store {
			case "sqlite":
				if err := os.MkdirAll(filepath.Join(f.dir, "data"), 0o700); err != nil {
					t.Fatal(err)
				}
				f.store = "sqlite:" + filepath.Join(f.dir, "data", "mombot.db")
			case "redis":
				f.store = testRedisURL(t)
			case "postgres":
				f.store = testPostgresURL(t)
			}
			testSummariesE2E(t, f, tt.chat)
		})
	}
}

const (
	e2eDecision = "we decided: pizza on Sunday at 6"
	e2eNote     = "Emma is allergic to peanuts"
)

func testSummariesE2E(t *testing.T, f *askFixture, chat bool) {
	f.claude.Enqueue(anthropictest.Text("Pizza on Sunday at 6, got it."))
	f.ask(askErin, e2eDecision)
	f.claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_sum_r1", Name: "remember", Input: map[string]any{"text": e2eNote, "scope": "family"}}),
		anthropictest.Text("Noted as #1."),
	)
	f.ask(askErin, "please remember: "+e2eNote)

	// Erin's conversation expires (a timeout of one second, and a pause
	// longer than that), so her next message starts a session.
	time.Sleep(1100 * time.Millisecond)
	before := len(f.claude.Requests())
	f.claude.Enqueue(anthropictest.Text("Pizza, on Sunday at 6."))
	const question = "what did we decide for Sunday?"
	var stdout, stderr string
	var err error
	if chat {
		stdout, stderr, err = f.mombotIn(question+"\n", "chat", "--from", askErin, "--timeout", "1")
	} else {
		stdout, stderr, err = f.mombot("ask", "--timeout", "1", "--from", askErin, question)
	}
	if err != nil || stdout != "Pizza, on Sunday at 6.\n" {
		t.Fatalf("the new session's message: %q, %v\n%s", stdout, err, stderr)
	}
	reqs := f.claude.Requests()[before:]
	if len(reqs) != 2 || reqs[0].Params.Model != assistant.DefaultSummaryModel || reqs[1].Params.Model == assistant.DefaultSummaryModel {
		t.Fatalf("the new session's message made %d requests, want the summarizer's, then the reply's", len(reqs))
	}
	fold := summarizerPrompt(reqs[0])
	for _, want := range []string{"#1 (family) " + e2eNote, e2eDecision} {
		if !strings.Contains(fold, want) {
			t.Errorf("the summarizer's request lacks %q:\n%s", want, fold)
		}
	}
	system := string(reqs[1].Params.System)
	note := strings.Index(system, "#1 (family) "+e2eNote)
	summary := strings.Index(system, conversation.SummaryHeader)
	if note < 0 || summary < note || !strings.Contains(system[summary:], e2eDecision) {
		t.Errorf("the new session's request should show the note, then the summary holding the decision:\n%s", system)
	}
	if n := len(reqs[1].Params.Messages); n != 1 {
		t.Errorf("the new session's request sent %d messages, want its own alone", n)
	}

	// Jason sees the family's note, not Erin's summary; he has nothing to
	// fold.
	before = len(f.claude.Requests())
	f.claude.Enqueue(anthropictest.Text("Hi Jason."))
	f.ask(askJason, "hi")
	for _, r := range f.claude.Requests()[before:] {
		if r.Params.Model == assistant.DefaultSummaryModel || strings.Contains(string(r.Body), "pizza on Sunday") {
			t.Errorf("Jason's message made a summarizer's call or was shown Erin's summary: %s", r.Body)
		}
		if !strings.Contains(string(r.Params.System), "#1 (family) "+e2eNote) {
			t.Errorf("Jason's request does not show the family's note: %s", r.Params.System)
		}
	}

	// Jason forgets the note: Erin's next request, in her session, holds
	// its text nowhere: not as a note, not in the summary, not in a turn.
	if out, stderr, err := f.mombot("memory", "forget", askJason, "1"); err != nil {
		t.Fatalf("memory forget: %q, %v\n%s", out, err, stderr)
	}
	before = len(f.claude.Requests())
	f.claude.Enqueue(anthropictest.Text("Sunday at 6."))
	f.ask(askErin, "remind me when")
	for _, r := range f.claude.Requests()[before:] {
		if strings.Contains(strings.ToLower(string(r.Body)), "peanuts") {
			t.Errorf("a request after the forget holds the note's text: %s", r.Body)
		}
	}

	// mombot usage: Erin's calls at Sonnet's prices, her summarizer's at
	// Haiku's.
	want := 0.0
	for _, r := range f.claude.Requests() {
		// Erin's requests, the summarizer's for her included, start with
		// her message (the system prompt's example names her too).
		if r.Usage == nil || !bytes.Contains(r.Params.Messages[0], []byte("[From Erin]")) {
			continue
		}
		u := conversation.Tokens{InputTokens: int64(r.Usage.InputTokens), CacheReadTokens: int64(r.Usage.CacheReadInputTokens), OutputTokens: int64(r.Usage.OutputTokens)}
		if c := r.Usage.CacheCreation; c != nil {
			u.CacheWrite5mTokens, u.CacheWrite1hTokens = int64(c.Ephemeral5mInputTokens), int64(c.Ephemeral1hInputTokens)
		}
		if r.Params.Model == assistant.DefaultSummaryModel {
			want += usage.HaikuPrices.TokensCost(u)
		} else {
			want += usage.DefaultPrices.TokensCost(u)
		}
	}
	out, stderr, err := f.mombot("usage", "--json", "--full")
	if err != nil {
		t.Fatalf("usage: %v\n%s", err, stderr)
	}
	var rep struct {
		People []struct {
			Phone string  `json:"phone"`
			Calls int64   `json:"api_calls"`
			Cost  float64 `json:"estimated_cost_usd"`
		} `json:"people"`
		SummaryPrices *usage.Prices `json:"summary_prices_per_million_tokens"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	if rep.SummaryPrices == nil || *rep.SummaryPrices != usage.HaikuPrices {
		t.Errorf("usage prices the summaries at %v, want Haiku's", rep.SummaryPrices)
	}
	found := false
	for _, p := range rep.People {
		if p.Phone == askErin {
			found = true
			// 1 + 2 (a tool round) + 2 (the summarizer's and the
			// reply's) + 1 calls.
			if p.Calls != 6 || math.Abs(p.Cost-want) > 1e-9 {
				t.Errorf("Erin's usage: %d calls, $%.6f; want 6 calls, $%.6f", p.Calls, p.Cost, want)
			}
		}
	}
	if !found {
		t.Errorf("usage has no row for Erin: %s", out)
	}
}

// mombotIn runs the binary in the fixture's folder with stdin as its
// input and returns its output.
func (f *askFixture) mombotIn(stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.dir
	cmd.Env = f.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestServeFoldsSummaries: mombot serve, on the file, SQLite, Redis and
// PostgreSQL stores. Erin writes a note in a message; after her
// conversation has expired, the sweep of the next serve process folds it
// with the summary model, off the reply's path, and her next message's
// request shows the summary without a call of its own to the summarizer. Jason's request
// shows the note and not her summary.
func TestServeFoldsSummaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs mombot serve")
	}
	for name, newStore := range testStores {
		t.Run(name, func(t *testing.T) {
			f := newServeFixture(t, newStore(t), map[string]string{erin: "Erin", "+14155555678": "Jason"})
			run := time.Now().UnixNano()
			msg := func(from string, n int, text string) []byte {
				return webhookPayload(inMessage{From: from, ID: fmt.Sprintf("wamid.sum.%d.%d", run, n), Text: text})
			}
			f.claude.Enqueue(
				anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_serve_r1", Name: "remember", Input: map[string]any{"text": e2eNote, "scope": "family"}}),
				anthropictest.Text("Noted as #1."),
			)
			p := f.start()
			if code := p.deliver(msg(erinWaID, 1, e2eDecision+"; and remember: "+e2eNote)); code != 200 {
				t.Fatalf("delivery: %d", code)
			}
			waitSent(t, f.graph, 1, 20*time.Second)
			p.stop()

			// The conversation expires (a timeout of one second, and a
			// pause longer than that); the sweep at the next start folds it.
			time.Sleep(1100 * time.Millisecond)
			p = f.start("--timeout", "1")
			waitLog(t, p, `msg="conversation: folded turns into summaries" summaries=1`)
			reqs := f.claude.Requests()
			if n := len(reqs); n != 3 || reqs[2].Params.Model != assistant.DefaultSummaryModel {
				t.Fatalf("%d requests after the sweep, want the message's 2 and the summarizer's", n)
			}
			if fold := summarizerPrompt(reqs[2]); !strings.Contains(fold, e2eDecision) || !strings.Contains(fold, "#1 (family) "+e2eNote) {
				t.Errorf("the summarizer's request lacks the turn or the note:\n%s", fold)
			}

			f.claude.Enqueue(anthropictest.Text("Pizza, on Sunday at 6."))
			p.deliver(msg(erinWaID, 2, "what did we decide for Sunday?"))
			waitSent(t, f.graph, 2, 20*time.Second)
			reqs = f.claude.Requests()
			if n := len(reqs); n != 4 || reqs[3].Params.Model == assistant.DefaultSummaryModel {
				t.Fatalf("%d requests after Erin's next message, want one more, the reply's", n)
			}
			system := string(reqs[3].Params.System)
			if !strings.Contains(system, "#1 (family) "+e2eNote) || !strings.Contains(system, conversation.SummaryHeader) || !strings.Contains(system, e2eDecision) {
				t.Errorf("Erin's new session does not show the note and her summary:\n%s", system)
			}

			f.claude.Enqueue(anthropictest.Text("Hi Jason."))
			p.deliver(msg(jasonWaID, 3, "hi"))
			waitSent(t, f.graph, 3, 20*time.Second)
			reqs = f.claude.Requests()
			jason := reqs[len(reqs)-1]
			if !strings.Contains(string(jason.Params.System), "#1 (family) "+e2eNote) || strings.Contains(string(jason.Body), "pizza on Sunday") {
				t.Errorf("Jason's request should show the note and not Erin's summary:\n%s", jason.Params.System)
			}
			p.stop()
		})
	}
}

// TestSummaryWithoutNotesE2E: with "memory": {"notes": false}, mombot ask
// still folds and shows a person's summary, with no note tools offered.
func TestSummaryWithoutNotesE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs mombot")
	}
	f := newAskFixture(t, buildMombot(t))
	f.configure(`"memory": {"notes": false}`)
	f.claude.Enqueue(anthropictest.Text("Pizza on Sunday at 6, got it."))
	f.ask(askErin, e2eDecision)
	time.Sleep(1100 * time.Millisecond) // past the timeout of one second below
	before := len(f.claude.Requests())
	f.claude.Enqueue(anthropictest.Text("Pizza, on Sunday at 6."))
	if out, stderr, err := f.mombot("ask", "--timeout", "1", "--from", askErin, "what did we decide for Sunday?"); err != nil {
		t.Fatalf("ask: %q, %v\n%s", out, err, stderr)
	}
	reqs := f.claude.Requests()[before:]
	if len(reqs) != 2 || reqs[0].Params.Model != assistant.DefaultSummaryModel {
		t.Fatalf("%d requests, want the summarizer's, then the reply's", len(reqs))
	}
	system := string(reqs[1].Params.System)
	if !strings.Contains(system, conversation.SummaryHeader) || !strings.Contains(system, e2eDecision) || strings.Contains(system, conversation.MemoryHeader) {
		t.Errorf("with notes off the new session should show the summary alone:\n%s", system)
	}
	if strings.Contains(string(reqs[1].Params.Tools), `"remember"`) {
		t.Errorf("with notes off the request offers the note tools: %s", reqs[1].Params.Tools)
	}
}
