package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"
)

// The fake's model of the prompt cache. It follows the rules of the
// prompt caching guide (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
//
//   - The prompt is processed in the order tools, system, messages; a
//     cache entry is the exact prefix up to and including a block with
//     cache_control. The top-level cache_control (automatic caching) puts
//     a breakpoint on the last block of the request. The cache_control
//     markers themselves are not part of the prefix, so a breakpoint that
//     moves does not change what is cached, and a message whose content is
//     a string is the same prompt as one text block holding it.
//   - On each request every breakpoint is looked up at its own block and
//     at up to 20 blocks before it ("the lookback window"); the longest
//     prefix found is read from the cache. A prefix more than 20 blocks
//     before every breakpoint is never found.
//   - What follows the read prefix up to the last breakpoint is written:
//     one entry per breakpoint, each part billed at the lifetime of the
//     breakpoint that ends it; the rest of the prompt is input.
//   - A prefix shorter than the model's minimum cacheable length
//     (MinCacheableTokens) is never written; a request below it reads and
//     writes nothing at that breakpoint.
//   - An entry lives 5 minutes ("ttl" absent or "5m") or 1 hour
//     ("ttl":"1h") from its last use: a write, or a read, refreshes it.
//   - At most 4 breakpoints, the automatic one included (checkBody), and
//     a 1h breakpoint must not come after a 5m one in processing order;
//     both are 400 invalid_request_error with the API's messages.
//
// Tokens are estimated, not counted: a block is its JSON, compacted and
// without its cache_control, at 4 bytes to a token, rounded up; an image
// is 1,600 tokens whatever its size (see imageTokens). A string
// system prompt or message content counts as the text block holding it.
// The JSON around the blocks (model, roles, brackets) is not counted. The
// estimate is what the fake bills; it is stable, so tests can compute it.
// A cache_control inside a tool_result's content counts against the limit
// of four (checkBody) but is not modelled as a breakpoint; the assistant
// never sends one.
//
// Entries are keyed by a running SHA-256 of the model and every block
// before them (with the message's role), so two requests share an entry
// exactly when they share the prefix.

// MinCacheableTokens returns the model's minimum cacheable prompt length,
// from the table of the prompt caching guide, section "Cache limitations":
// 512 tokens for Claude Opus 5, Fable 5 and Mythos 5; 1,024 for Claude
// Opus 4.8, Sonnet 5, Sonnet 4.6, Sonnet 4.5, Opus 4.1 and Opus 4; 2,048
// for Opus 4.7, Haiku 3.5 and Haiku 3; 4,096 for Opus 4.6, Opus 4.5 and
// Haiku 4.5. The table does not list every model the SDK names: Sonnet 5.5
// gets Sonnet 5's 1,024, Opus 5.5 and the 5.1 and 5.2 Fable and Mythos
// models 1,024 (more than their family's 512, so as not to promise caching
// the API might not give), Haiku 5.5 Haiku 4.5's 4,096, and any other
// model 4,096, the largest minimum documented. [Server.SetCacheMinimum]
// overrides it.
func MinCacheableTokens(model string) int {
	model = dated.ReplaceAllString(model, "")
	if n, ok := minCacheable[model]; ok {
		return n
	}
	return 4096
}

// CacheMinimumModels returns, sorted, the models whose minimum
// cacheable length [MinCacheableTokens] takes from its table rather than
// the 4,096 of a model it does not know, so that a test can compare the
// fake's table with the one of the code it fakes for.
func CacheMinimumModels() []string {
	return slices.Sorted(maps.Keys(minCacheable))
}

// dated matches the date suffix of a pinned model name.
var dated = regexp.MustCompile(`-\d{8}$`)

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

// Lifetimes of cache entries.
const (
	TTL5m = 5 * time.Minute
	TTL1h = time.Hour
)

// lookback is how many blocks before a breakpoint are looked up.
const lookback = 20

// cacheBlock is one block of a prompt in processing order.
type cacheBlock struct {
	key    [32]byte      // the running hash of the prefix ending here
	tokens int           // the prefix's tokens, this block included
	ttl    time.Duration // the breakpoint's lifetime, 0 if none
}

// prompt is a request as the cache sees it.
type prompt struct {
	blocks []cacheBlock
	bps    []int // indexes of the blocks with a breakpoint, in order
}

// tokens returns the prompt's estimated length.
func (p prompt) tokens() int {
	if n := len(p.blocks); n > 0 {
		return p.blocks[n-1].tokens
	}
	return 0
}

// cacheControl is a cache_control object.
type cacheControl struct {
	Type string  `json:"type"`
	TTL  *string `json:"ttl"`
}

// parsePrompt splits an accepted body into blocks. It returns an API error
// for a cache_control the API refuses: a bad ttl, more than
// MaxCacheBreakpoints, or a 1h breakpoint after a 5m one.
func parsePrompt(body []byte) (prompt, *apiError) {
	var top struct {
		Model        string            `json:"model"`
		CacheControl json.RawMessage   `json:"cache_control"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return prompt{}, invalid("There was an issue with the formatting of your request: %v", err)
	}
	h := sha256.Sum256([]byte(top.Model))
	var p prompt
	var ttls []string // the ttl of each breakpoint, as written
	var paths []string
	add := func(path, role string, raw json.RawMessage) *apiError {
		canon, cc, err := canonical(raw)
		if err != nil {
			return invalid("%s: %v", path, err)
		}
		tokens := (len(canon) + 3) / 4
		if isImage(canon) {
			tokens = imageTokens
		}
		if n := len(p.blocks); n > 0 {
			tokens += p.blocks[n-1].tokens
		}
		d := sha256.New()
		d.Write(h[:])
		d.Write([]byte(role))
		d.Write([]byte{0})
		d.Write(canon)
		copy(h[:], d.Sum(nil))
		b := cacheBlock{key: h, tokens: tokens}
		if cc != nil {
			ttl, e := parseTTL(path, cc)
			if e != nil {
				return e
			}
			b.ttl = ttl
			p.bps = append(p.bps, len(p.blocks))
			ttls = append(ttls, ttlName(ttl))
			paths = append(paths, path)
		}
		p.blocks = append(p.blocks, b)
		return nil
	}
	for i, t := range top.Tools {
		if e := add(fmt.Sprintf("tools.%d", i), "tool", t); e != nil {
			return prompt{}, e
		}
	}
	if len(top.System) > 0 && string(top.System) != "null" {
		for i, b := range blocksOf(top.System) {
			if e := add(fmt.Sprintf("system.%d", i), "system", b); e != nil {
				return prompt{}, e
			}
		}
	}
	for i, m := range top.Messages {
		for j, b := range blocksOf(m.Content) {
			if e := add(fmt.Sprintf("messages.%d.content.%d", i, j), m.Role, b); e != nil {
				return prompt{}, e
			}
		}
	}
	if len(top.CacheControl) > 0 && string(top.CacheControl) != "null" && len(p.blocks) > 0 {
		ttl, e := parseTTL("cache_control", top.CacheControl)
		if e != nil {
			return prompt{}, e
		}
		last := len(p.blocks) - 1
		// An explicit breakpoint on the last block is the same one.
		if n := len(p.bps); n == 0 || p.bps[n-1] != last {
			p.blocks[last].ttl = ttl
			p.bps = append(p.bps, last)
			ttls = append(ttls, ttlName(ttl))
			paths = append(paths, "")
		}
	}
	// The TTL ordering rule. The message is the API's, as reported in
	// anthropics' users' issues (e.g. cnighswonger/claude-code-cache-fix#44):
	// "messages.0.content.4.cache_control.ttl: a ttl='1h' cache_control
	// block must not come after a ttl='5m' cache_control block. Note that
	// blocks are processed in the following order: `tools`, `system`,
	// `messages`."
	seen5m := false
	for i, ttl := range ttls {
		switch {
		case ttl == "5m":
			seen5m = true
		case seen5m:
			at := paths[i]
			if at != "" {
				at += "."
			}
			return prompt{}, invalid("%scache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.", at)
		}
	}
	return p, nil
}

func ttlName(d time.Duration) string {
	if d == TTL1h {
		return "1h"
	}
	return "5m"
}

// parseTTL returns the lifetime a cache_control asks for.
func parseTTL(path string, raw json.RawMessage) (time.Duration, *apiError) {
	var cc cacheControl
	if json.Unmarshal(raw, &cc) != nil || cc.Type != "ephemeral" {
		return 0, invalid("%s.cache_control.type: Input should be 'ephemeral'", path)
	}
	switch {
	case cc.TTL == nil || *cc.TTL == "5m":
		return TTL5m, nil
	case *cc.TTL == "1h":
		return TTL1h, nil
	}
	return 0, invalid("%s.cache_control.ttl: Input should be '5m' or '1h'", path)
}

// blocksOf returns the blocks of a system prompt or a message's content:
// a string is one text block.
func blocksOf(raw json.RawMessage) []json.RawMessage {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return nil
		}
		return []json.RawMessage{TextBlock(s)}
	}
	var blocks []json.RawMessage
	_ = json.Unmarshal(raw, &blocks) // checkBody accepted it
	return blocks
}

// canonical returns a block's JSON without its cache_control, with its keys
// sorted and compacted, and the cache_control, if it has one.
func canonical(raw json.RawMessage) ([]byte, json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, err
	}
	cc := obj["cache_control"]
	delete(obj, "cache_control")
	if string(cc) == "null" {
		cc = nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, nil, err
	}
	return bytes.TrimSpace(b.Bytes()), cc, nil
}

// imageTokens is what an image block counts: the most an image costs,
// about 1,600 tokens for one resized to fit 1.15 megapixels (the vision
// guide's "Calculate image costs": tokens = width * height / 750).
const imageTokens = 1600

// isImage reports whether a canonical block is an image.
func isImage(canon []byte) bool {
	var b struct{ Type string }
	return json.Unmarshal(canon, &b) == nil && b.Type == "image"
}

// entry is a cached prefix.
type entry struct {
	ttl     time.Duration
	expires time.Time
}

// cache is the prompt cache of one organisation: the fake's.
type cache struct {
	entries map[[32]byte]*entry
	min     int // the minimum cacheable tokens; -1 means the model's
}

// apply bills p against the cache at now and updates the cache: the
// entries read are refreshed, the entries written are added.
func (c *cache) apply(p prompt, model string, now time.Time) Usage {
	total := 0
	if n := len(p.blocks); n > 0 {
		total = p.blocks[n-1].tokens
	}
	u := Usage{InputTokens: total, CacheCreation: &CacheCreation{}} // the server adds OutputTokens, from the content
	if len(p.bps) == 0 {
		return u
	}
	if c.entries == nil {
		c.entries = map[[32]byte]*entry{}
	}
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	minimum := c.min
	if minimum < 0 {
		minimum = MinCacheableTokens(model)
	}
	// Each breakpoint's lookup: its block and up to lookback before it.
	// Every entry found is used, so it is refreshed.
	read := -1 // the block read up to
	for _, bp := range p.bps {
		for i := bp; i >= 0 && i >= bp-lookback; i-- {
			if e, ok := c.entries[p.blocks[i].key]; ok {
				e.expires = now.Add(e.ttl)
				read = max(read, i)
				break
			}
		}
	}
	readTokens := 0
	if read >= 0 {
		readTokens = p.blocks[read].tokens
	}
	// The write: from the read prefix to each breakpoint after it that
	// is long enough, billed at that breakpoint's lifetime.
	written, w5m, w1h := readTokens, 0, 0
	for _, bp := range p.bps {
		b := p.blocks[bp]
		if bp <= read || b.tokens < minimum {
			continue
		}
		part := b.tokens - written
		written = b.tokens
		if b.ttl == TTL1h {
			w1h += part
		} else {
			w5m += part
		}
		if e, ok := c.entries[b.key]; ok && e.ttl > b.ttl {
			e.expires = now.Add(e.ttl) // a 1h entry is not shortened
		} else {
			c.entries[b.key] = &entry{ttl: b.ttl, expires: now.Add(b.ttl)}
		}
	}
	u.CacheReadInputTokens = readTokens
	u.CacheCreationInputTokens = w5m + w1h
	u.CacheCreation = &CacheCreation{Ephemeral5mInputTokens: w5m, Ephemeral1hInputTokens: w1h}
	u.InputTokens = total - written
	return u
}
