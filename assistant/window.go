package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/mombot/mombot/conversation"
)

// The request window. The store keeps the original design's memory (the
// last MaxTurns turns); what is sent to Claude is a suffix of those turns
// whose start moves in jumps: it stays put while the window is under its
// high-water marks, so that the request's prefix is byte-identical from
// one message to the next and is read from the prompt cache, and then
// jumps forward to the low-water marks, always to a turn boundary (a turn
// is valid on its own: it opens with the person's message and every
// tool_use in it is answered in it). A window that slid by one turn per
// message, as the stored history does once it is full, would change the
// prefix every time and write the whole prompt to the cache at 1.25x
// without ever reading it.
//
// The start is persisted as the "window" key of every saved turn (see
// windowRecord): a key the stores keep byte for byte, which the seed's
// file format and the Python original carry and ignore. Counting from the
// end of the conversation, it survives the store dropping its oldest
// turns, a restart, another replica and `mombot ask` in a new process.

// Defaults of [WindowOptions].
const (
	// DefaultWindowMaxTokens bounds the history sent, in tokens. The
	// history is re-read at 0.1x for every message; past this size a jump
	// to a shorter window is cheaper than reading it on.
	DefaultWindowMaxTokens = 24_000
	// DefaultWindowLowTokens is the most history, in tokens, a jump
	// keeps.
	DefaultWindowLowTokens = 8_000
	// DefaultWindowMinTurns is the fewest recent turns Claude sees, when
	// there are that many, whatever the token marks say.
	DefaultWindowMinTurns = 2
)

// WindowOptions bound the history sent with each message (see the package
// documentation, "Requests and the prompt cache"). The zero value means
// the defaults.
type WindowOptions struct {
	// MaxTurns is the high-water mark in turns: the window jumps once it
	// would hold more. 0 means the memory's turn cap; a larger value is
	// the cap too, since the store keeps no more.
	MaxTurns int
	// LowTurns is the low-water mark in turns: a jump keeps at most this
	// many. 0 means 30% of MaxTurns, rounded up (3 of 10).
	LowTurns int
	// MaxTokens is the high-water mark in tokens of history; 0 means
	// DefaultWindowMaxTokens.
	MaxTokens int
	// LowTokens is the low-water mark in tokens: a jump keeps at most this
	// much history. 0 means DefaultWindowLowTokens, or MaxTokens if that is
	// smaller.
	LowTokens int
	// MinTurns is the fewest recent turns Claude sees, whatever the marks
	// say; 0 means DefaultWindowMinTurns, or the turn cap if that is
	// smaller. Only a prompt too long for the model sends fewer.
	MinTurns int
}

// Validate returns an error, one line naming the mistake, unless o is
// valid for a memory that keeps maxTurns turns: no negative sizes, low-water
// marks not above their high-water marks, and MinTurns not above the cap.
func (o WindowOptions) Validate(maxTurns int) error {
	_, err := o.resolve(maxTurns)
	return err
}

// CheckCacheTTL returns an error unless policy is a lifetime policy:
// TTLAuto, TTL5m, TTL1h or "" (TTLAuto).
func CheckCacheTTL(policy string) error { return checkTTL(policy) }

// resolve returns o with its defaults filled in for a memory that keeps
// maxTurns turns, or an error naming what is wrong.
func (o WindowOptions) resolve(maxTurns int) (WindowOptions, error) {
	switch {
	case o.MaxTurns < 0:
		return o, fmt.Errorf("window max turns must not be negative, got %d", o.MaxTurns)
	case o.LowTurns < 0:
		return o, fmt.Errorf("window low turns must not be negative, got %d", o.LowTurns)
	case o.MaxTokens < 0:
		return o, fmt.Errorf("window max tokens must not be negative, got %d", o.MaxTokens)
	case o.LowTokens < 0:
		return o, fmt.Errorf("window low tokens must not be negative, got %d", o.LowTokens)
	case o.MinTurns < 0:
		return o, fmt.Errorf("window min turns must not be negative, got %d", o.MinTurns)
	case o.MinTurns > maxTurns:
		return o, fmt.Errorf("window min turns (%d) must not be above the memory's turn cap (%d)", o.MinTurns, maxTurns)
	case o.MaxTurns > 0 && o.LowTurns > o.MaxTurns:
		return o, fmt.Errorf("window low turns (%d) must not be above its max turns (%d)", o.LowTurns, o.MaxTurns)
	case o.MaxTokens > 0 && o.LowTokens > o.MaxTokens:
		return o, fmt.Errorf("window low tokens (%d) must not be above its max tokens (%d)", o.LowTokens, o.MaxTokens)
	}
	if o.MaxTurns == 0 || o.MaxTurns > maxTurns {
		o.MaxTurns = maxTurns
	}
	if o.LowTurns > o.MaxTurns {
		return o, fmt.Errorf("window low turns (%d) must not be above the memory's turn cap (%d)", o.LowTurns, maxTurns)
	}
	if o.LowTurns == 0 {
		// Measured in the cache scenario at a cap of 10: keeping 3 turns
		// costs 0.30x of no caching, 4 turns 0.32x, 5 turns 0.34x and 6
		// turns 0.36x, since every jump writes what it keeps again.
		o.LowTurns = (o.MaxTurns*3 + 9) / 10
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultWindowMaxTokens
	}
	if o.LowTokens == 0 {
		o.LowTokens = min(DefaultWindowLowTokens, o.MaxTokens)
	}
	if o.MinTurns == 0 {
		o.MinTurns = min(DefaultWindowMinTurns, maxTurns)
	}
	if o.MinTurns > o.LowTurns {
		o.LowTurns = o.MinTurns
	}
	if o.LowTurns > o.MaxTurns {
		o.MaxTurns = o.LowTurns
	}
	return o, nil
}

// windowKey is the turn's extra key holding its windowRecord.
const windowKey = "window"

// windowRecord is what a saved turn records about the window it was sent
// in, for the next message: the window continues from it.
type windowRecord struct {
	// Turns is how many earlier turns were sent with this turn, so the
	// window's start is that many turns before it.
	Turns int `json:"turns"`
	// PromptTokens and PromptBytes are the size of the turn's last
	// request, in tokens as the API counted them (input, cache writes and
	// cache reads) and in bytes of JSON: their ratio turns the bytes of a
	// history into tokens.
	PromptTokens int64 `json:"prompt_tokens,omitempty"`
	PromptBytes  int64 `json:"prompt_bytes,omitempty"`
	// Gaps counts the gaps between this person's messages observed in
	// this conversation, and Pauses those longer than a 5-minute cache
	// entry lives; both are halved once Gaps reaches maxGaps, so recent
	// habits weigh more.
	Gaps   int `json:"gaps,omitempty"`
	Pauses int `json:"pauses,omitempty"`
	// TTL is the lifetime of the breakpoint at the end of the history
	// sent, if there was one.
	TTL string `json:"ttl,omitempty"`
}

// maxGaps is when the gap counts are halved.
const maxGaps = 32

// window is the history one message is sent with.
type window struct {
	loaded        bool                // the turns are the stored ones
	paused        bool                // the gap before this message outlived a 5m entry
	turns         []conversation.Turn // the stored turns, oldest first, oversized ones shortened
	start         int                 // the first turn sent
	jumped        bool                // the start is not where the last message's was
	rec           windowRecord        // the record of the last turn, with this gap counted
	tokensPerByte float64             // tokens per byte of request JSON: the last request's ratio, or 0.25
}

// lastRecord returns the record of the last stored turn, if it has a
// valid one.
func lastRecord(turns []conversation.Turn) (windowRecord, bool) {
	if len(turns) == 0 {
		return windowRecord{}, false
	}
	raw, ok := turns[len(turns)-1].Extra[windowKey]
	if !ok {
		return windowRecord{}, false
	}
	var r windowRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.Turns < 0 || r.Gaps < 0 || r.Pauses < 0 {
		return windowRecord{}, false // not ours: start afresh
	}
	return r, true
}

// planWindow returns the window for a message sent at now to a
// conversation c, by the marks of o.
func planWindow(c conversation.Conversation, now time.Time, o WindowOptions) *window {
	// Turns too large on their own are counted and sent shortened.
	w := &window{loaded: true, turns: shortTurns(c.Turns, turnLimit(o)), tokensPerByte: 0.25}
	n := len(w.turns)
	rec, ok := lastRecord(c.Turns)
	if rec.PromptTokens > 0 && rec.PromptBytes > 0 {
		// Kept to what text can be: a request with a photo counts
		// megabytes of base64 as some 1,600 tokens, and its history,
		// where the photo is a placeholder, is not like that.
		w.tokensPerByte = min(max(float64(rec.PromptTokens)/float64(rec.PromptBytes), 0.2), 1)
	}
	// A record from elsewhere may hold anything: keep the counts sane.
	rec.Gaps = min(rec.Gaps, maxGaps)
	rec.Pauses = min(rec.Pauses, rec.Gaps)
	if n > 0 && !c.LastActive.IsZero() {
		rec.Gaps++
		if now.Sub(c.LastActive) > cacheTTL5m {
			rec.Pauses++
			w.paused = true
		}
		if rec.Gaps >= maxGaps {
			rec.Gaps, rec.Pauses = rec.Gaps/2, rec.Pauses/2
		}
	}
	w.rec = rec
	w.jumped = !ok
	// Where the last message's window started; a conversation without a
	// record (older, or written by the Python original) starts at its
	// first turn, as it was sent before.
	start := 0
	if ok {
		start = n - 1 - rec.Turns
	}
	switch {
	case n == 0:
		return w
	case start < 0, // the store dropped the turn the window started at
		n-start > o.MaxTurns,
		w.tokens(w.turns[start:]) > o.MaxTokens && n-start > o.MinTurns:
		w.jumped = true
		start = max(0, n-o.LowTurns)
		for n-start > o.MinTurns && w.tokens(w.turns[start:]) > o.LowTokens {
			start++
		}
	}
	w.start = start
	return w
}

// sent returns the turns sent.
func (w *window) sent() []conversation.Turn { return w.turns[w.start:] }

// history returns the messages sent before the new one.
func (w *window) history() []conversation.Message {
	return conversation.Conversation{Turns: w.sent()}.Messages()
}

// tokens estimates the tokens of turns.
func (w *window) tokens(turns []conversation.Turn) int {
	return int(float64(bytesOf(turns)) * w.tokensPerByte)
}

// bytesOf returns the bytes turns take in a request.
func bytesOf(turns []conversation.Turn) int {
	n := 0
	for _, t := range turns {
		for _, m := range t.Messages {
			n += len(m.Content) + len(`{"role":"assistant","content":},`)
		}
	}
	return n
}

// shrink drops the oldest turns of the window so that it holds at least
// excess tokens fewer, or half its turns if excess is unknown (0). It
// reports whether any turn was dropped.
func (w *window) shrink(excess int) bool {
	n := len(w.turns)
	if w.start >= n {
		return false
	}
	w.jumped = true
	if excess <= 0 {
		w.start += (n - w.start + 1) / 2
		return true
	}
	// A margin, since the estimate is an estimate.
	want := excess + excess/10 + 1
	dropped := 0
	for w.start < n && dropped < want {
		dropped += w.tokens(w.turns[w.start : w.start+1])
		w.start++
	}
	return true
}

// recordFor returns the record to save with the turn sent in w, whose last
// request was promptBytes long and counted promptTokens.
func (w *window) recordFor(promptTokens, promptBytes int64, ttl string) (json.RawMessage, error) {
	r := w.rec
	r.Turns = len(w.turns) - w.start
	r.PromptTokens, r.PromptBytes, r.TTL = promptTokens, promptBytes, ttl
	b, err := json.Marshal(r)
	if err != nil {
		return nil, errors.New("encode window record")
	}
	return b, nil
}

// send makes the turn's next API call, with the window's history. When
// the API answers that the prompt is too long for the model, it drops the
// window's oldest turns and tries once more, rather than failing the
// message; a second refusal is returned.
func (t *turn) send(ctx context.Context) (response, error) {
	if !t.marked {
		t.mark, t.marked = t.historyMark(), true
	}
	resp, err := t.api().send(ctx, t.history, t.msgs, t.mark, t.memoryBlock())
	if excess, ok := tooLongBy(err); ok && !t.shrunk && t.win.shrink(excess) {
		t.shrunk = true
		t.log.Warn("assistant: prompt too long; trying once more with fewer turns of history",
			"err", err, "window_turns", len(t.win.sent()))
		t.history = t.win.history()
		t.mark = t.historyMark()
		resp, err = t.api().send(ctx, t.history, t.msgs, t.mark, t.memoryBlock())
	}
	if err == nil {
		u := resp.usage
		t.promptTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		t.promptBytes = int64(resp.bodyLen)
		t.learn(u)
	}
	return resp, err
}

// learn counts, from the usage of the turn's first call, a cache that
// expired although the gap was short: a write where a read was expected
// (the window did not move, the last message was minutes ago, yet less
// than half of the history was read). The API may evict entries early, or another replica's clock
// may differ; either way the person's history is better off living longer.
func (t *turn) learn(u Usage) {
	w := t.win
	if t.learnt || !w.loaded || w.jumped || w.paused || len(w.sent()) == 0 {
		t.learnt = true
		return
	}
	t.learnt = true
	// Expected from the history: all of it but the last answer, which
	// the last request did not send. The tools and system prompt, when
	// they have an hour-long entry of their own, are read anyway.
	sent := w.sent()
	last := sent[len(sent)-1].Messages
	history := w.tokens(sent)
	expected := history - w.tokens([]conversation.Turn{{Messages: last[len(last)-1:]}})
	a := t.api()
	read := int(u.CacheReadInputTokens)
	if a.staticTTL != "" {
		read -= a.staticTokens
	} else {
		expected += a.staticTokens
	}
	// The last request must have been long enough to be cached at all.
	if w.rec.PromptTokens >= int64(a.minCache) && expected >= 100 &&
		u.CacheCreationInputTokens > 0 && float64(read) < 0.5*float64(expected) {
		w.rec.Pauses++
		t.log.Info("assistant: prompt cache expired early; counted as a pause", "cache_creation_input_tokens", u.CacheCreationInputTokens)
	}
}

// historyMark returns the lifetime of the breakpoint at the end of the
// turn's history, or "" for none; it is the same for every call of the
// turn, so that they share the entry.
func (t *turn) historyMark() string {
	sent := t.win.sent()
	if len(sent) == 0 {
		return ""
	}
	history := t.win.tokens(sent)
	a := t.api() // the fallback model has a minimum of its own
	prefix := a.staticTokens + history
	// What this request is expected to write up to the mark: the last
	// answer, if the last request's entries are still there; the whole
	// history after a jump or a pause that outlived them.
	stake := history
	if a.staticTTL == "" {
		stake = prefix
	}
	fresh := stake
	if !t.win.jumped && (!t.win.paused || t.win.rec.TTL == TTL1h) {
		last := sent[len(sent)-1].Messages
		fresh = t.win.tokens([]conversation.Turn{{Messages: last[len(last)-1:]}})
	}
	return historyTTL(a.ttl, a.staticTTL, prefix, stake, fresh, a.minCache, t.win.rec)
}

// windowRecord returns the turn's "window" key, or nil if the history was
// not loaded (the store was down).
func (t *turn) windowRecord() json.RawMessage {
	if t.win == nil || !t.win.loaded {
		return nil
	}
	rec, err := t.win.recordFor(t.promptTokens, t.promptBytes, t.mark)
	if err != nil {
		t.log.Warn("assistant: window record", "err", err)
		return nil
	}
	return rec
}

// tooLongBy reports whether err is the API's 400 for a prompt over the
// model's context window (see promptTooLong), and by how many tokens, if
// it says (0 if not): "prompt is too long: 208310 tokens > 200000
// maximum".
func tooLongBy(err error) (int, bool) {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || !promptTooLong(apiErr) {
		return 0, false
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	m := tooLong.FindStringSubmatch(strings.TrimSpace(body.Error.Message))
	if m == nil || m[2] == "" {
		return 0, true
	}
	got, err1 := strconv.Atoi(m[2])
	limit, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil || got <= limit {
		return 0, true
	}
	return got - limit, true
}

var tooLong = regexp.MustCompile(`^prompt is too long(: (\d+) tokens > (\d+) maximum)?`)
