package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/internal/redistest"
)

// turnsSent returns how many earlier turns a request of a text-only
// conversation carries: every turn is a question and an answer.
func turnsSent(t testing.TB, r anthropictest.Request) int {
	t.Helper()
	return (len(r.Params.Messages) - 1) / 2
}

// The window's start stays put until the stored history is full and its
// first turn is dropped, then jumps to the low-water mark (3 of 10
// turns), and grows again: the sequence of turns sent is 0..10, 3..10,
// 3..10...
func TestWindowMovesInSteps(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
	var got []int
	for i := range 26 {
		e.clock.Advance(time.Minute)
		e.mustHandle(erin, fmt.Sprintf("message %d", i))
		got = append(got, turnsSent(t, e.lastRequest()))
	}
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, 4, 5, 6, 7, 8, 9, 10, 3, 4, 5, 6, 7, 8, 9}
	if !slices.Equal(got, want) {
		t.Errorf("turns sent:\n got %v\nwant %v", got, want)
	}
	// The store keeps the original design's memory all along.
	if n := len(e.turns(erin)); n != 10 {
		t.Errorf("stored %d turns, want 10", n)
	}
	if n := len(e.history(erin)); n != 20 {
		t.Errorf("History returns %d messages, want 20", n)
	}
}

// The window's start is kept with the conversation, in every store, so
// that a new process (ask), a restart or another replica continues the
// same prefix: here every message is handled by a new assistant on a newly
// opened store.
func TestWindowSurvivesNewProcesses(t *testing.T) {
	dir := t.TempDir()
	redisPrefix := "" // the redis subtest's own, made on its first open
	stores := []struct {
		name string
		open func(t *testing.T) conversation.Store
	}{
		{"jsonfile", func(t *testing.T) conversation.Store {
			s, err := jsonfile.Open(filepath.Join(dir, "conversations.json"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"sqlite", func(t *testing.T) conversation.Store {
			s, err := sqlite.Open(filepath.Join(dir, "mombot.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"redis", func(t *testing.T) conversation.Store {
			if redisPrefix == "" {
				redisPrefix = redistest.Prefix(t)
			}
			s, err := redis.Open(context.Background(), redistest.URL(t), &redis.Options{Prefix: redisPrefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			srv := anthropictest.NewServer(t)
			srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
			clock := storetest.NewClock(time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC))
			srv.SetNow(clock.Now)
			var got []int
			for i := range 14 {
				clock.Advance(time.Minute)
				store := st.open(t)
				mem, err := conversation.New(store, &conversation.Options{Now: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				a, err := assistant.New(srv.Client(), mem, &assistant.Options{Now: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: fmt.Sprintf("message %d", i)}); err != nil {
					t.Fatal(err)
				}
				if i == 13 {
					_ = mem.Clear(context.Background(), erin) // a shared Redis keeps nothing of the test's
				}
				if err := store.Close(); err != nil {
					t.Fatal(err)
				}
				reqs := srv.Requests()
				got = append(got, turnsSent(t, reqs[len(reqs)-1]))
			}
			want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, 4, 5}
			if !slices.Equal(got, want) {
				t.Errorf("turns sent:\n got %v\nwant %v", got, want)
			}
			for _, r := range srv.Rejected() {
				t.Errorf("rejected: %s", r)
			}
		})
	}
}

// The token marks: the window jumps once its history passes MaxTokens,
// keeps at most LowTokens, and never fewer than MinTurns turns.
func TestWindowTokenMarks(t *testing.T) {
	long := strings.Repeat("A long answer about dinner. ", 20) // ~560 bytes, ~140 tokens
	e := newEnv(t, &assistant.Options{Window: assistant.WindowOptions{MaxTokens: 1000, LowTokens: 400, MinTurns: 2}})
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text(long) })
	var got []int
	for i := range 12 {
		e.clock.Advance(time.Minute)
		e.mustHandle(erin, fmt.Sprintf("message %d", i))
		got = append(got, turnsSent(t, e.lastRequest()))
	}
	jumps := 0
	for i, n := range got {
		if i > 0 && n < got[i-1] {
			jumps++
			if n != 2 {
				t.Errorf("message %d: a jump kept %d turns, want 2 (400 tokens hold 2 turns of ~150, and MinTurns is 2)", i, n)
			}
		} else if i > 0 && n != got[i-1]+1 {
			t.Errorf("message %d: the window went from %d to %d turns without a jump", i, got[i-1], n)
		}
		if n > 7 {
			t.Errorf("message %d: %d turns of ~150 tokens sent, over the 1,000-token mark", i, n)
		}
	}
	if jumps == 0 {
		t.Errorf("no jump: %v", got)
	}
	t.Logf("turns sent: %v", got)
}

// "prompt is too long": the window loses its oldest turns and the message
// is tried once more; the next message continues from the shorter window.
func TestPromptTooLongShrinksOnce(t *testing.T) {
	e := newEnv(t, nil)
	e.allowRejected = "prompt is too long" // provoked on purpose
	answer := strings.Repeat("Here is a long answer. ", 40)
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text(answer) })
	for i := range 6 {
		e.clock.Advance(time.Minute)
		e.mustHandle(erin, fmt.Sprintf("message %d", i))
	}
	full := e.lastRequest()
	var size int
	if u := full.Usage; u != nil {
		size = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	}
	// The next request would be about 250 tokens longer: allow 600 less.
	e.srv.SetContextWindow(size - 600)
	before := len(e.srv.Requests())
	r, err := e.handle(erin, "and another thing")
	if err != nil {
		t.Fatalf("handle: %v (%q)", err, r.Text)
	}
	reqs := e.srv.Requests()[before:]
	if len(reqs) != 2 || reqs[0].Status != http.StatusBadRequest || reqs[1].Status != http.StatusOK {
		t.Fatalf("requests: %d, want a refused one and a shorter one", len(reqs))
	}
	if a, b := turnsSent(t, reqs[0]), turnsSent(t, reqs[1]); b >= a || b < 1 {
		t.Errorf("retried with %d turns after %d", b, a)
	}
	if !strings.Contains(e.logs.String(), "prompt too long") {
		t.Errorf("the shrink is not logged:\n%s", e.logs.String())
	}
	e.srv.SetContextWindow(anthropictest.DefaultContextWindow)
	e.clock.Advance(time.Minute)
	e.mustHandle(erin, "thanks")
	if a, b := turnsSent(t, reqs[1]), turnsSent(t, e.lastRequest()); b != a+1 {
		t.Errorf("the next message sent %d turns, want %d: the shorter window continued", b, a+1)
	}

	// A prompt that stays too long fails the message after one retry.
	e.srv.SetContextWindow(10)
	before = len(e.srv.Requests())
	r, err = e.handle(erin, "one more")
	if !errors.Is(err, apology.ErrPromptTooLong) || r.Text != assistant.ErrorMessage(err) {
		t.Errorf("got %q, %v; want the sentence for a prompt too long", r.Text, err)
	}
	if n := len(e.srv.Requests()) - before; n != 2 {
		t.Errorf("%d requests, want 2: one retry", n)
	}
}

// breakpointTTLs returns the ttl of every breakpoint of a request, in
// processing order ("5m", "1h"), with "auto" for the top-level one.
func breakpointTTLs(t testing.TB, r anthropictest.Request) []string {
	t.Helper()
	var out []string
	ttl := func(raw json.RawMessage) string {
		if bytes.Contains(raw, []byte(`"ttl":"1h"`)) {
			return "1h"
		}
		return "5m"
	}
	find := func(raw json.RawMessage) {
		for _, m := range bytes.SplitAfter(raw, []byte(`"cache_control":`))[1:] {
			end := bytes.IndexByte(m, '}')
			out = append(out, ttl(m[:end+1]))
		}
	}
	find(r.Params.Tools)
	find(r.Params.System)
	for _, m := range r.Params.Messages {
		find(m)
	}
	if len(r.Params.CacheControl) > 0 {
		out = append(out, "auto "+ttl(r.Params.CacheControl))
	}
	return out
}

// Lifetimes: the family prompt's breakpoint lives an hour; a person who
// answers within minutes gets 5-minute entries; once they pause, the end
// of their history gets an hour, so that after the next pause only the
// last turn is written again.
func TestCacheLifetimes(t *testing.T) {
	family := assistant.DefaultSystemPrompt + strings.Repeat("\nThe family's recipes: tacos, soup, lasagne.", 120)
	e := newEnv(t, &assistant.Options{SystemPrompt: family})
	answer := strings.Repeat("Here is an answer. ", 20)
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text(answer) })
	for i := range 5 {
		e.clock.Advance(time.Minute)
		e.mustHandle(erin, fmt.Sprintf("quick message %d", i))
		got := breakpointTTLs(t, e.lastRequest())
		want := []string{"1h", "5m", "auto 5m"}
		if i == 0 {
			want = []string{"1h", "auto 5m"} // no history yet
		}
		if !slices.Equal(got, want) {
			t.Errorf("quick message %d: breakpoints %v, want %v", i, got, want)
		}
	}
	// A pause longer than a 5-minute entry lives: the history is written
	// again, and from now on its end lives an hour.
	e.clock.Advance(12 * time.Minute)
	paused := e.mustHandle(erin, "back from the school run")
	if paused.Usage.CacheCreationInputTokens < 500 {
		t.Errorf("after the first pause %+v: want the history written again", paused.Usage)
	}
	e.clock.Advance(time.Minute)
	e.mustHandle(erin, "one more")
	if got := breakpointTTLs(t, e.lastRequest()); !slices.Equal(got, []string{"1h", "1h", "auto 5m"}) {
		t.Errorf("after a pause: breakpoints %v, want the history's end at 1h", got)
	}
	e.clock.Advance(20 * time.Minute)
	r := e.mustHandle(erin, "back again")
	if u := r.Usage; u.CacheReadInputTokens < 4*u.CacheCreationInputTokens {
		t.Errorf("after the second pause %+v: want most of the prompt read, only the last turn written", u)
	}
	for _, r := range e.srv.Requests() {
		if got := breakpointTTLs(t, r); len(got) > anthropictest.MaxCacheBreakpoints {
			t.Errorf("%d breakpoints: %v", len(got), got)
		}
	}
}

// The "5m" policy never asks for an hour; the built-in prompt, under the
// model's minimum, gets no breakpoint of its own.
func TestCacheLifetimePolicies(t *testing.T) {
	e := newEnv(t, &assistant.Options{CacheTTL: assistant.TTL5m, SystemPrompt: strings.Repeat("A long family prompt. ", 400)})
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
	for i := range 4 {
		e.clock.Advance(10 * time.Minute)
		e.mustHandle(erin, fmt.Sprintf("message %d", i))
		for _, ttl := range breakpointTTLs(t, e.lastRequest()) {
			if strings.Contains(ttl, "1h") {
				t.Errorf("message %d: a 1h breakpoint under the 5m policy", i)
			}
		}
	}
	b := newEnv(t, nil)
	b.srv.Enqueue(anthropictest.Text("ok"))
	b.mustHandle(erin, "hi")
	if got := breakpointTTLs(t, b.lastRequest()); !slices.Equal(got, []string{"auto 5m"}) {
		t.Errorf("built-in prompt: breakpoints %v, want only the automatic one", got)
	}
}

// Bad window or lifetime options are refused with one line saying which.
func TestWindowOptionsRefused(t *testing.T) {
	mem, err := conversation.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		opts assistant.Options
		want string
	}{
		{assistant.Options{Window: assistant.WindowOptions{MaxTurns: 4, LowTurns: 6}}, "window low turns (6) must not be above its max turns (4)"},
		{assistant.Options{Window: assistant.WindowOptions{MaxTokens: 100, LowTokens: 200}}, "window low tokens (200) must not be above its max tokens (100)"},
		{assistant.Options{Window: assistant.WindowOptions{MinTurns: 11}}, "window min turns (11) must not be above the memory's turn cap (10)"},
		{assistant.Options{Window: assistant.WindowOptions{LowTurns: 12}}, "window low turns (12) must not be above the memory's turn cap (10)"},
		{assistant.Options{Window: assistant.WindowOptions{LowTokens: -1}}, "window low tokens must not be negative, got -1"},
		{assistant.Options{CacheTTL: "2h"}, `cache ttl must be "auto", "5m" or "1h", got "2h"`},
	}
	for _, tt := range tests {
		_, err := assistant.New(anthropictest.NewServer(t).Client(), mem, &tt.opts)
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%+v) = %v, want ...%s", tt.opts, err, tt.want)
		}
	}
}

// A write where a read was expected (the entry was evicted early, or
// another replica's clock differs) counts as a pause, as the usage says.
func TestCacheMissCountsAsPause(t *testing.T) {
	family := assistant.DefaultSystemPrompt + strings.Repeat("\nThe family's recipes: tacos, soup, lasagne.", 120)
	e := newEnv(t, &assistant.Options{SystemPrompt: family})
	e.srv.Respond(func(anthropictest.Request) anthropictest.Response {
		return anthropictest.Text(strings.Repeat("An answer. ", 30))
	})
	var serverLag time.Duration
	e.srv.SetNow(func() time.Time { return e.clock.Now().Add(serverLag) })
	record := func() map[string]any {
		turns := e.turns(erin)
		var r map[string]any
		if err := json.Unmarshal(turns[len(turns)-1].Extra["window"], &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 3 {
		e.clock.Advance(time.Minute)
		e.mustHandle(erin, fmt.Sprintf("message %d", i))
	}
	if r := record(); r["pauses"] != nil || r["gaps"] != 2.0 {
		t.Fatalf("record %v, want 2 gaps and no pause", r)
	}
	serverLag = 10 * time.Minute // the cache's entries are gone
	e.clock.Advance(time.Minute)
	e.mustHandle(erin, "message 3")
	if r := record(); r["pauses"] != 1.0 || r["gaps"] != 3.0 {
		t.Errorf("record %v after an early expiry, want 3 gaps and 1 pause", r)
	}
	if !strings.Contains(e.logs.String(), "expired early") {
		t.Errorf("not logged:\n%s", e.logs.String())
	}
}
