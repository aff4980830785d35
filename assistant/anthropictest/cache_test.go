package anthropictest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
)

// clock is a settable clock for the fake's prompt cache.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// cacheServer returns a fake that answers "ok" to everything, on a clock
// the test moves.
func cacheServer(t *testing.T, minimum int) (*anthropictest.Server, *clock) {
	t.Helper()
	srv := anthropictest.NewServer(t)
	srv.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("ok") })
	c := &clock{t: time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)}
	srv.SetNow(c.now)
	srv.SetCacheMinimum(minimum)
	return srv, c
}

// text is a text block of n tokens by the fake's estimate (4 bytes to a
// token, the JSON of the block counted), optionally with cache_control.
func text(n int, tag string, cc string) string {
	// {"text":"...","type":"text"} is 26 bytes around the text.
	body := strings.Repeat("x", 4*n-26-len(tag)) + tag
	b := fmt.Sprintf(`{"type":"text","text":%q`, body)
	if cc != "" {
		b += `,"cache_control":` + cc
	}
	return b + "}"
}

const (
	eph   = `{"type":"ephemeral"}`
	eph1h = `{"type":"ephemeral","ttl":"1h"}`
)

// request returns a body with the given system blocks and messages (each
// a list of blocks, alternating user and assistant) and top-level
// cache_control, if top is not empty.
func request(top string, system []string, msgs ...[]string) string {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-5-5","max_tokens":10`)
	if top != "" {
		b.WriteString(`,"cache_control":` + top)
	}
	if len(system) > 0 {
		b.WriteString(`,"system":[` + strings.Join(system, ",") + `]`)
	}
	b.WriteString(`,"messages":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":[%s]}`, role, strings.Join(m, ","))
	}
	b.WriteString(`]}`)
	return b.String()
}

// usage is the usage of a request answered "ok", whose content,
// {"type":"text","text":"ok"}, is 7 tokens of output by the fake's
// estimate.
func usage(in, w5m, w1h, read int) anthropictest.Usage {
	return anthropictest.Usage{
		InputTokens: in, OutputTokens: 7,
		CacheCreationInputTokens: w5m + w1h, CacheReadInputTokens: read,
		CacheCreation: &anthropictest.CacheCreation{Ephemeral5mInputTokens: w5m, Ephemeral1hInputTokens: w1h},
	}
}

func checkUsage(t *testing.T, what string, got, want anthropictest.Usage) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s: usage = %s, want %s", what, g, w)
	}
}

// The rules of the prompt caching guide, one per case: each says which.
func TestCacheRules(t *testing.T) {
	sys := []string{text(1000, "s", "")}
	sysBP := []string{text(1000, "s", eph)}
	q1, a1, q2 := []string{text(100, "q1", "")}, []string{text(200, "a1", "")}, []string{text(50, "q2", "")}

	t.Run("without cache_control nothing is read or written", func(t *testing.T) {
		srv, _ := cacheServer(t, 0)
		postUsage(t, srv, request("", sys, q1))
		checkUsage(t, "second", postUsage(t, srv, request("", sys, q1, a1, q2)), usage(1350, 0, 0, 0))
	})
	t.Run("the automatic breakpoint caches up to the last block and a follow-up reads it", func(t *testing.T) {
		srv, _ := cacheServer(t, -1)
		checkUsage(t, "first", postUsage(t, srv, request(eph, sys, q1)), usage(0, 1100, 0, 0))
		checkUsage(t, "follow-up", postUsage(t, srv, request(eph, sys, q1, a1, q2)), usage(0, 250, 0, 1100))
	})
	t.Run("a prefix under the model's minimum is not cached", func(t *testing.T) {
		srv, _ := cacheServer(t, -1) // claude-sonnet-5-5: 1,024
		small := []string{text(500, "s", "")}
		checkUsage(t, "first", postUsage(t, srv, request(eph, small, q1)), usage(600, 0, 0, 0))
		checkUsage(t, "second", postUsage(t, srv, request(eph, small, q1)), usage(600, 0, 0, 0))
		// Once the conversation is long enough, it is.
		checkUsage(t, "longer", postUsage(t, srv, request(eph, small, q1, a1, []string{text(300, "q2", "")})), usage(0, 1100, 0, 0))
	})
	t.Run("cache_control is not part of the prefix, and a string is a text block", func(t *testing.T) {
		srv, _ := cacheServer(t, 0)
		postUsage(t, srv, request("", sysBP, q1))
		body := request("", []string{text(1000, "s", eph1h)}, q1)
		checkUsage(t, "moved", postUsage(t, srv, body), usage(100, 0, 0, 1000))
		asString := strings.Replace(request(eph, sys, q1), `[`+text(100, "q1", "")+`]`, fmt.Sprintf("%q", strings.Repeat("x", 4*100-28)+"q1"), 1)
		postUsage(t, srv, asString)
		checkUsage(t, "string", postUsage(t, srv, request(eph, sys, q1)), usage(0, 0, 0, 1100))
	})
	t.Run("the lookback reaches 20 blocks before a breakpoint and no further", func(t *testing.T) {
		srv, _ := cacheServer(t, 0)
		var blocks []string
		for i := range 22 {
			blocks = append(blocks, text(10, fmt.Sprint(i), ""))
		}
		// An entry at block 0 (the system prompt).
		postUsage(t, srv, request("", sysBP, blocks[:1]))
		// A breakpoint 20 blocks after it finds it.
		checkUsage(t, "20 blocks", postUsage(t, srv, request(eph, sys, blocks[:20])), usage(0, 200, 0, 1000))
		srv2, _ := cacheServer(t, 0)
		postUsage(t, srv2, request("", sysBP, blocks[:1]))
		// 21 blocks after it, it does not.
		checkUsage(t, "21 blocks", postUsage(t, srv2, request(eph, sys, blocks[:21])), usage(0, 1210, 0, 0))
	})
	t.Run("a 5m entry expires 5 minutes after its last use; a hit refreshes it", func(t *testing.T) {
		srv, c := cacheServer(t, 0)
		postUsage(t, srv, request(eph, sys, q1))
		c.advance(4 * time.Minute)
		checkUsage(t, "after 4 min", postUsage(t, srv, request(eph, sys, q1)), usage(0, 0, 0, 1100))
		c.advance(4 * time.Minute) // 8 minutes after the write, 4 after the read
		checkUsage(t, "refreshed", postUsage(t, srv, request(eph, sys, q1)), usage(0, 0, 0, 1100))
		c.advance(5 * time.Minute)
		checkUsage(t, "expired", postUsage(t, srv, request(eph, sys, q1)), usage(0, 1100, 0, 0))
	})
	t.Run("a 1h entry lives an hour; writes are split by lifetime", func(t *testing.T) {
		srv, c := cacheServer(t, 0)
		checkUsage(t, "first", postUsage(t, srv, request(eph, []string{text(1000, "s", eph1h)}, q1)), usage(0, 100, 1000, 0))
		c.advance(30 * time.Minute)
		checkUsage(t, "30 min later", postUsage(t, srv, request(eph, []string{text(1000, "s", eph1h)}, q1)), usage(0, 100, 0, 1000))
		c.advance(61 * time.Minute)
		checkUsage(t, "61 min later", postUsage(t, srv, request(eph, []string{text(1000, "s", eph1h)}, q1)), usage(0, 100, 1000, 0))
	})
	t.Run("breakpoints under the minimum are written with the next one", func(t *testing.T) {
		srv, _ := cacheServer(t, 1050)
		checkUsage(t, "first", postUsage(t, srv, request(eph, []string{text(1000, "s", eph1h)}, q1)), usage(0, 1100, 0, 0))
	})
}

// The API's 400s for cache_control, with its messages.
func TestCacheControlRefused(t *testing.T) {
	sys1h := []string{text(1000, "s", eph1h)}
	tests := []struct {
		name, body, want string
	}{
		{"1h after 5m", request("", []string{text(1000, "s", eph)}, []string{text(10, "q", eph1h)}),
			"messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		{"automatic 1h after 5m", request(eph1h, []string{text(1000, "s", eph)}, []string{text(10, "q", "")}),
			"cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		{"unknown ttl", request("", sys1h, []string{text(10, "q", `{"type":"ephemeral","ttl":"2h"}`)}),
			"messages.0.content.0.cache_control.ttl: Input should be '5m' or '1h'"},
		{"five breakpoints", request(eph, sys1h, []string{text(10, "a", eph)}, []string{text(10, "b", eph)}, []string{text(10, "c", eph)}),
			"A maximum of 4 blocks with cache_control may be provided. Found 5."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := cacheServer(t, 0)
			status, e, _ := post(t, srv, headers(), tt.body)
			if status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Message != tt.want {
				t.Errorf("got %d %s %q, want 400 invalid_request_error %q", status, e.Error.Type, e.Error.Message, tt.want)
			}
		})
	}
	// 1h before 5m is the documented way to mix them.
	srv, _ := cacheServer(t, 0)
	if status, e, _ := post(t, srv, headers(), request(eph, sys1h, []string{text(10, "q", "")})); status != http.StatusOK {
		t.Errorf("1h then 5m: %d %s", status, e.Error.Message)
	}
}

// A prompt over the context window is refused as the API does.
func TestPromptTooLong(t *testing.T) {
	srv, _ := cacheServer(t, 0)
	srv.SetContextWindow(1000)
	status, e, _ := post(t, srv, headers(), request(eph, []string{text(1000, "s", "")}, []string{text(10, "q", "")}))
	if want := "prompt is too long: 1010 tokens > 1000 maximum"; status != http.StatusBadRequest || e.Error.Message != want {
		t.Errorf("got %d %q, want 400 %q", status, e.Error.Message, want)
	}
}
