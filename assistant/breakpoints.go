package assistant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Prompt cache breakpoints and their lifetimes.
//
// Pricing (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
// "Pricing"): a 5-minute cache write costs 1.25x the base input price, a
// 1-hour write 2x, a read 0.1x. A request has at most 4 breakpoints, and a
// breakpoint with ttl "1h" must not come after one with "5m" in the order
// tools, system, messages, or the API refuses the request with a 400. A
// prefix shorter than the model's minimum cacheable length is never
// cached, so a breakpoint there is wasted. Each request carries up to
// four:
//
//  1. The static prefix, on the system prompt: tools and system prompt are
//     the same bytes for the whole family, so it lives an hour (written at
//     2x once an hour, instead of at 1.25x each time nobody has written for
//     5 minutes). Left out when tools and prompt are under the model's
//     minimum, as the built-in ones are.
//  2. With the family's notes on, the memory shown to a member (notes.go),
//     a second system block: the same bytes for the whole session. It
//     lives an hour (5 minutes under TTL5m, so that it never follows a
//     shorter one), so that a window's jump, or the next session with the
//     same notes, reads it. Left out, like the first, below the model's
//     minimum.
//  3. The end of the history sent, on the last block of the last stored
//     message (the previous answer). Its lifetime is chosen per person (see
//     historyTTL): an hour-long entry here survives a pause, and the next
//     message then rewrites only the last turn, not the whole history.
//  4. The top-level automatic breakpoint, 5 minutes, on the last block of
//     the request: the next call of the same message, or the person's next
//     message, reads everything up to it.

// Cache lifetimes, as the API spells them.
const (
	TTL5m = "5m"
	TTL1h = "1h"
	// TTLAuto chooses the history's lifetime per person (see historyTTL).
	TTLAuto = "auto"
)

// cacheTTL5m is how long a 5-minute entry lives.
const cacheTTL5m = 5 * time.Minute

// Prices relative to base input tokens.
const (
	price5m   = 1.25
	price1h   = 2.0
	priceRead = 0.1
)

// MinCacheableTokens returns the minimum cacheable prompt length of model,
// from the prompt caching guide's table ("Cache limitations"): 512 tokens
// for Claude Opus 5, Fable 5 and Mythos 5; 1,024 for Opus 4.8, Sonnet 5,
// Sonnet 4.6, Sonnet 4.5, Opus 4.1 and Opus 4; 2,048 for Opus 4.7 and the
// Haiku 3 models; 4,096 for Opus 4.6, Opus 4.5 and Haiku 4.5. Models the
// table does not list get a conservative value: Sonnet 5.5 (the default)
// Sonnet 5's 1,024; Opus 5.5 and the Fable and Mythos 5.x models 1,024,
// more than their family's 512; Haiku 5.5 Haiku 4.5's 4,096; any other
// model 4,096, the largest minimum documented. A higher guess only leaves
// out a breakpoint that might have cached; the top-level breakpoint still
// caches the whole request.
func MinCacheableTokens(model string) int {
	model = datedModel.ReplaceAllString(model, "")
	if n, ok := minCacheable[model]; ok {
		return n
	}
	return 4096
}

var datedModel = regexp.MustCompile(`-\d{8}$`)

var minCacheable = map[string]int{
	"claude-opus-5": 512, "claude-fable-5": 512, "claude-mythos-5": 512,
	"claude-opus-4-8": 1024, "claude-sonnet-5": 1024, "claude-sonnet-4-6": 1024,
	"claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-opus-4": 1024,
	"claude-sonnet-4": 1024, "claude-3-7-sonnet": 1024,
	"claude-opus-4-7": 2048, "claude-3-5-haiku": 2048, "claude-3-haiku": 2048,
	"claude-opus-4-6": 4096, "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096,
	// Not in the table; see MinCacheableTokens.
	"claude-sonnet-5-5": 1024, "claude-opus-5-5": 1024,
	"claude-fable-5-1": 1024, "claude-fable-5-2": 1024,
	"claude-mythos-5-1": 1024, "claude-mythos-5-2": 1024,
	"claude-mythos-preview": 1024, "claude-haiku-5-5": 4096,
}

// checkTTL returns an error unless policy is a lifetime policy.
func checkTTL(policy string) error {
	switch policy {
	case "", TTLAuto, TTL5m, TTL1h:
		return nil
	}
	return fmt.Errorf("cache ttl must be %q, %q or %q, got %q", TTLAuto, TTL5m, TTL1h, policy)
}

// cacheControl returns the cache_control object for ttl.
func cacheControl(ttl string) string {
	if ttl == TTL1h {
		return `{"type":"ephemeral","ttl":"1h"}`
	}
	return `{"type":"ephemeral"}`
}

// staticTTL returns the lifetime of the static prefix's breakpoint under
// policy, or "" for none because the prefix is under the minimum.
func staticTTL(policy string, staticTokens, minimum int) string {
	switch {
	case staticTokens < minimum:
		return ""
	case policy == TTL5m:
		return TTL5m
	}
	return TTL1h
}

// historyTTL returns the lifetime of the breakpoint at the end of the
// history, or "" for none.
//
// Under TTLAuto it compares what each lifetime is expected to cost the
// person's next message. A 1-hour entry costs (2 - 1.25) more per token it
// writes; a 5-minute one, if the person pauses longer than 5 minutes,
// costs the whole prefix written again instead of read, (1.25 - 0.1) per
// token. The chance of a pause is learnt from the gaps between this
// person's messages (pauses of gaps, with a prior of 10%; see priorA), so
// a person who answers within minutes gets the
// cheaper 5-minute writes, and one who steps away for the school run gets
// an entry that is still there when they come back.
//
// prefixTokens is the whole prefix up to the breakpoint, stake the part of
// it a pause would have written again (without the static prefix when that
// has an entry of its own), and fresh the part this request writes anyway.
func historyTTL(policy, static string, prefixTokens, stake, fresh, minimum int, rec windowRecord) string {
	if prefixTokens < minimum {
		return ""
	}
	ttl := policy
	if policy == TTLAuto || policy == "" {
		pause := (float64(rec.Pauses) + priorA) / (float64(rec.Gaps) + priorB)
		if pause*(price5m-priceRead)*float64(stake) > (price1h-price5m)*float64(fresh) {
			ttl = TTL1h
		} else {
			ttl = TTL5m
		}
	}
	if ttl == TTL1h && static == TTL5m {
		return TTL5m // a 1h breakpoint must not follow a 5m one
	}
	return ttl
}

// markLast returns the request JSON of m with a cache_control of ttl on
// its last block that can carry one. A string content becomes one text
// block, which is the same prompt. It returns m's JSON unchanged if no
// block can carry one (thinking blocks cannot).
func markLast(m conversation.Message, ttl string) ([]byte, error) {
	plain, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var blocks []json.RawMessage
	if m.IsString() {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		blocks = []json.RawMessage{conversation.TextBlock(s)}
	} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, err
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		b, err := conversation.ParseBlock(blocks[i])
		if err != nil {
			return nil, err
		}
		switch b.Type {
		case "thinking", "redacted_thinking":
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(blocks[i], &keys); err != nil {
			return nil, err
		}
		if _, ok := keys["cache_control"]; ok {
			return plain, nil // marked already: leave it as stored
		}
		raw := bytes.TrimRight(blocks[i], " \t\r\n")
		marked := make([]byte, 0, len(raw)+48)
		marked = append(marked, raw[:len(raw)-1]...)
		if len(raw) > 2 {
			marked = append(marked, ',')
		}
		marked = append(marked, `"cache_control":`+cacheControl(ttl)+`}`...)
		blocks[i] = marked
		return conversation.NewMessage(m.Role, blocks...).MarshalJSON()
	}
	return plain, nil
}

// The prior of the chance of a pause, as if half a pause had been seen in
// five gaps (10%): with it, a person's first messages get 5-minute
// entries, and one pause is enough to switch them to an hour. Measured in
// the cache scenario (scenario_test.go): one pause in four (the first
// guess) cost the no-pause conversations 8% more; no prior at all cost
// the ones with pauses 8% more.
const priorA, priorB = 0.5, 5.0
