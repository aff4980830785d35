package anthropictest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
)

// The fake's model of the prompt cache, used for the usage of responses
// that script none. It works on bytes, 4 to a token, and keeps to what the
// API documents: a request caches its prefix only up to its cache
// breakpoints, and reads from the cache only a prefix that an earlier
// request wrote at one of its breakpoints and that it repeats exactly, up
// to one of its own. A request without cache_control reads and writes
// nothing. It leaves out the minimum cacheable length (the short prompts of
// tests would never be cached), the 20-block lookback and the time to
// live, which tests of a few messages within seconds never reach.

// breakpoints returns the byte offsets of body where its cached prefixes
// end, in increasing order: the end of every block that has a
// cache_control, and, for the top-level cache_control (automatic caching),
// the end of the last message.
func breakpoints(body []byte) []int {
	type frame struct {
		object    bool
		expectKey bool
		key       string // the key of the value being read
		cached    bool   // the object has a cache_control
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []frame
	var out []int
	auto, lastMessage := false, 0
	ccPending := false // the previous token was a cache_control key
	for {
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF: checkBody accepted the body, so it is well formed
		}
		top := len(stack) - 1
		if ccPending {
			ccPending = false
			if tok != nil { // "cache_control": null is no breakpoint
				if top == 0 {
					auto = true
				} else {
					stack[top].cached = true
				}
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].expectKey = true // after this value
				}
				stack = append(stack, frame{object: t == '{', expectKey: t == '{'})
			default:
				f := stack[top]
				stack = stack[:top]
				end := int(dec.InputOffset())
				if f.cached {
					out = append(out, end)
				}
				// A message: an object in the top-level "messages" array.
				if top == 2 && f.object && stack[0].key == "messages" {
					lastMessage = end
				}
			}
		case string:
			if top >= 0 && stack[top].object && stack[top].expectKey {
				stack[top].key, stack[top].expectKey = t, false
				ccPending = t == "cache_control"
				continue
			}
			if top >= 0 && stack[top].object {
				stack[top].expectKey = true
			}
		default:
			if top >= 0 && stack[top].object {
				stack[top].expectKey = true
			}
		}
	}
	if auto && lastMessage > 0 {
		out = append(out, lastMessage)
	}
	// Fields may come in any order, a "system" after the "messages".
	slices.Sort(out)
	return out
}

// cacheUsage returns the usage of body, given the accepted requests before
// it: what it reads from the cache (the longest prefix an earlier request
// wrote at a breakpoint, that body repeats up to one of its own), what it
// writes (from there to its last breakpoint) and the rest, its input.
func cacheUsage(body []byte, bps []int, earlier []Request) Usage {
	if len(bps) == 0 {
		return Usage{InputTokens: len(body) / 4, OutputTokens: 16}
	}
	last := bps[len(bps)-1]
	hit := 0
	for _, r := range earlier {
		if r.Status != http.StatusOK {
			continue // refused, or a scripted error: nothing was cached
		}
		shared := 0
		for shared < len(body) && shared < len(r.Body) && body[shared] == r.Body[shared] {
			shared++
		}
		for _, q := range r.breakpoints {
			if q <= shared && q <= last && q > hit {
				hit = q
			}
		}
	}
	return Usage{
		InputTokens:              (len(body) - last) / 4,
		OutputTokens:             16,
		CacheCreationInputTokens: (last - hit) / 4,
		CacheReadInputTokens:     hit / 4,
	}
}
