package assistant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mombot/mombot/conversation"
)

// Oversized turns. The window keeps at least MinTurns turns whatever their
// size, so one turn that is large on its own (25 tool rounds of long
// lists, a long pasted text) would be sent with every later message. A
// turn over its share of the window, WindowOptions.MaxTokens / MinTurns
// tokens at bytesPerToken bytes a token (48,000 bytes by default), is sent
// in a shortened form instead; the store keeps it whole.
//
// The shortened form depends only on the stored turn and the options, so
// it is the same bytes in every request and the prompt cache serves it as
// it serves any other turn. It keeps the turn's shape, which keeps it
// valid: every text, tool input and tool result longer than one bound is
// cut to it (a tool input to {}), the cut marked, and the bound is the
// largest that makes the turn fit. When even the smallest bound,
// minClip, does not (a turn of hundreds of tool rounds, or blocks that
// cannot be cut), the turn is sent as two messages: the person's words
// and a note of what the exchange did with its final answer, each cut.

// bytesPerToken is the bytes of JSON counted for a token where the count
// must not change from one message to the next.
const bytesPerToken = 4

// minClip is the smallest bound a shortened turn cuts its blocks to.
const minClip = 256

// clipSlack is how much longer than the bound a text may be and still be
// sent whole: cutting less than that would save nothing once the marker
// is added.
const clipSlack = 100

// turnLimit returns the most bytes (see bytesOf) a turn is sent with
// under the resolved options o.
func turnLimit(o WindowOptions) int {
	return o.MaxTokens * bytesPerToken / max(o.MinTurns, 1)
}

// turnBytes returns the bytes turn takes in a request.
func turnBytes(turn conversation.Turn) int {
	return bytesOf([]conversation.Turn{turn})
}

// shortTurns returns turns with each turn over limit bytes in its
// shortened form; it returns turns itself when none is over.
func shortTurns(turns []conversation.Turn, limit int) []conversation.Turn {
	var out []conversation.Turn
	for i, t := range turns {
		if turnBytes(t) <= limit {
			continue
		}
		if out == nil {
			out = slices.Clone(turns)
		}
		out[i] = shorten(t, limit)
	}
	if out == nil {
		return turns
	}
	return out
}

// shorten returns turn's shortened form, at most limit bytes.
func shorten(turn conversation.Turn, limit int) conversation.Turn {
	parsed := make([][]piece, len(turn.Messages))
	largest := minClip
	for i, m := range turn.Messages {
		blocks, err := m.Blocks()
		if err != nil {
			return summarize(turn, limit)
		}
		parsed[i] = make([]piece, len(blocks))
		for j, b := range blocks {
			parsed[i][j].Block = b
			if b.Type == "tool_result" {
				parsed[i][j].text = resultText(b.Content)
			}
			largest = max(largest, len(b.Raw))
		}
	}
	build := func(bound int) conversation.Turn {
		out := conversation.Turn{Messages: make([]conversation.Message, len(turn.Messages)), Extra: turn.Extra}
		for i, m := range turn.Messages {
			out.Messages[i] = clipMessage(m, parsed[i], bound)
		}
		return out
	}
	// The size grows with the bound, so the largest bound that fits is
	// found by bisection; it is checked, since blocks rebuilt when cut
	// need not shrink exactly in step.
	n := largest - minClip + 1
	i := sort.Search(n, func(i int) bool { return turnBytes(build(minClip+i)) > limit })
	if i > 0 {
		if out := build(minClip + i - 1); turnBytes(out) <= limit {
			return out
		}
	}
	return summarize(turn, limit)
}

// piece is a content block of a turn being shortened.
type piece struct {
	conversation.Block
	text string // a tool_result's text (resultText)
}

// clipMessage returns m, whose blocks are blocks, with every text, tool
// input and tool result over bound cut to it.
func clipMessage(m conversation.Message, blocks []piece, bound int) conversation.Message {
	if m.IsString() {
		if len(blocks) == 1 && len(blocks[0].Text) > bound+clipSlack {
			return conversation.Message{Role: m.Role, Content: quote(clipText(blocks[0].Text, bound)), Extra: m.Extra}
		}
		return m
	}
	raws := make([]json.RawMessage, len(blocks))
	changed := false
	for i, b := range blocks {
		raws[i] = clipBlock(b, bound)
		changed = changed || !bytes.Equal(raws[i], b.Raw)
	}
	if !changed {
		return m
	}
	out := conversation.NewMessage(m.Role, raws...)
	out.Extra = m.Extra
	return out
}

// clipBlock returns b's bytes with its text, tool input or tool result cut
// to bound, if it is over; other blocks are kept as they are.
func clipBlock(b piece, bound int) json.RawMessage {
	switch b.Type {
	case "text":
		if len(b.Text) > bound+clipSlack {
			return conversation.TextBlock(clipText(b.Text, bound))
		}
	case "tool_use":
		if len(b.Input) > bound {
			if raw, err := withEmptyInput(b.Raw); err == nil {
				return raw
			}
		}
	case "tool_result":
		if len(b.Raw) > bound+clipSlack {
			var out bytes.Buffer
			out.WriteString(`{"type":"tool_result","tool_use_id":`)
			out.Write(quote(b.ToolUseID))
			out.WriteString(`,"content":`)
			out.Write(quote(clipText(b.text, bound)))
			if b.IsError {
				out.WriteString(`,"is_error":true`)
			}
			out.WriteByte('}')
			return out.Bytes()
		}
	}
	return b.Raw
}

// resultText returns the text of a tool_result's content: the string, or
// its text blocks joined.
func resultText(content json.RawMessage) string {
	m := conversation.Message{Role: conversation.RoleUser, Content: content}
	if len(content) == 0 || string(content) == "null" {
		return ""
	}
	return m.Text()
}

// clipText returns s cut to at most bound bytes at a character boundary,
// marked, or a marker alone for an empty s.
func clipText(s string, bound int) string {
	if strings.TrimSpace(s) == "" {
		return "[shortened: not sent again]"
	}
	if len(s) <= bound {
		return s
	}
	cut := bound
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [shortened: %d more bytes not sent again]", s[:cut], len(s)-cut)
}

// summarize returns turn as two messages: the person's first message and a
// note of what the exchange did with its final answer, each cut to fit in
// limit bytes.
func summarize(turn conversation.Turn, limit int) conversation.Turn {
	bound := max(limit/3, minClip)
	asked := ""
	if len(turn.Messages) > 0 {
		asked = turn.Messages[0].Text()
	}
	var calls []string
	count := map[string]int{}
	answer := ""
	for _, m := range turn.Messages {
		blocks, err := m.Blocks()
		if err != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type != "tool_use" && b.Type != "server_tool_use" {
				continue
			}
			name := clipQuote(b.Name, 64)
			if count[name] == 0 {
				calls = append(calls, name)
			}
			count[name]++
		}
		if m.Role == conversation.RoleAssistant {
			if text := strings.TrimSpace(m.Text()); text != "" {
				answer = text
			}
		}
	}
	names := make([]string, 0, min(len(calls), 10))
	for _, name := range calls[:min(len(calls), 10)] {
		names = append(names, fmt.Sprintf("%s ×%d", name, count[name]))
	}
	if len(calls) > 10 {
		names = append(names, fmt.Sprintf("%d more tools", len(calls)-10))
	}
	note := fmt.Sprintf("[Shortened: this exchange was %d bytes, too long to send again", turnBytes(turn))
	if len(names) > 0 {
		note += "; the tools called were " + strings.Join(names, ", ")
	}
	note += ".]"
	if answer != "" {
		note += "\n" + clipText(answer, bound)
	}
	return conversation.Turn{
		Messages: []conversation.Message{
			conversation.UserText(clipText(asked, bound)),
			conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock(note)),
		},
		Extra: turn.Extra,
	}
}
