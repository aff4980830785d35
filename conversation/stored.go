package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"
)

// What a store keeps so that loading and saving need not decode what it
// wrote itself. [Memory.Save] validates a turn once; the store writes the
// turn's bytes (Turn.MarshalJSON) with their [Checksum], and on load splits
// bytes whose checksum matches with [ParseStoredTurn], without decoding or
// validating them again. Bytes without a matching checksum were not written
// this way (a file edited by hand, a store written by an older version or
// by another program): the store decodes them with json.Unmarshal and
// passes them through [Repair].
//
// Beside each turn a store keeps its [Turn.ToolUseIDs], so that
// [Store.Append] can refuse a reused id ([CheckToolIDs]) without loading
// the conversation.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of data: what a store keeps beside the bytes
// of a turn it wrote, to tell them on load from bytes it did not write.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// ToolUseIDs returns the ids of the tool_use blocks of t's assistant
// messages, in order, or nil if it has none. For the turn that
// [Memory.Save] hands to [Store.Append] they are the ids Save found as it
// validated it.
func (t Turn) ToolUseIDs() []string {
	if t.saved.of(t) {
		return slices.Clip(t.saved.ids)
	}
	var ids []string
	for _, m := range t.Messages {
		if m.Role != RoleAssistant || !mayHoldToolUse(m.Content) {
			continue
		}
		ids = appendToolUseIDs(ids, m)
	}
	return ids
}

// appendToolUseIDs appends the ids of m's tool_use blocks to ids. Compact
// content (as stored) is split into blocks without decoding, and only the
// blocks that mention tool_use are parsed.
func appendToolUseIDs(ids []string, m Message) []string {
	c := m.Content
	if len(c) < 2 || c[0] != '[' || needsCompact(c) {
		blocks, _ := m.Blocks()
		for _, b := range blocks {
			if b.Type == "tool_use" {
				ids = append(ids, b.ID)
			}
		}
		return ids
	}
	for i := 1; i < len(c)-1; {
		if c[i] == ',' {
			i++
		}
		end, ok := skipValue(c, i)
		if !ok || end <= i {
			return ids
		}
		if raw := c[i:end]; mayHoldToolUse(raw) {
			if b, err := parseBlock(raw); err == nil && b.Type == "tool_use" {
				ids = append(ids, b.ID)
			}
		}
		i = end
	}
	return ids
}

// KeptTurns returns how many of the n turns of a conversation last active at
// lastActive stay next to a turn appended at now, by [AppendTurn]'s rule:
// none once it has expired, and at most lim.MaxTurns-1 (all with no cap).
// They are the last ones.
func KeptTurns(n int, lastActive, now time.Time, lim Limits) int {
	if n == 0 || Expired(lastActive, now, lim.Timeout) {
		return 0
	}
	if lim.MaxTurns > 0 {
		return min(n, lim.MaxTurns-1)
	}
	return n
}

// CheckToolIDs returns an error wrapping [ErrInvalidTurn] if one of ids is
// in inUse: the ids of the turns that stay next to the one being appended
// (see [KeptTurns]). The Messages API wants tool_use ids unique across a
// request, and [Repair] would drop such a turn on a later load. Stores call
// it in the atomic step of [Store.Append], so that two turns saved at once
// cannot both take an id.
func CheckToolIDs(ids, inUse []string) error {
	for _, id := range ids {
		if slices.Contains(inUse, id) {
			return fmt.Errorf("%w: tool_use id %s of this turn is already in the conversation's history; ids must be unique", ErrInvalidTurn, id)
		}
	}
	return nil
}

// errNotStored is returned by ParseStoredTurn for bytes of another shape
// than Turn.MarshalJSON writes.
var errNotStored = errors.New("conversation: not a stored turn")

// ParseStoredTurn splits data, the bytes of a turn that [Turn.MarshalJSON]
// wrote and that the caller knows to be unchanged since (their [Checksum]
// matches), into the turn's messages and extra keys, without decoding or
// validating them: what it returns is what was saved, byte for byte. The
// turn's slices point into data, which the caller must not change or reuse
// afterwards; each has its capacity cut to its length, so that appending to
// one cannot overwrite another.
//
// It fails on bytes of any other shape, such as a turn indented or written
// by another program: decode those with json.Unmarshal and validate them.
func ParseStoredTurn(data []byte) (Turn, error) {
	const head = `{"messages":[`
	if !bytes.HasPrefix(data, []byte(head)) {
		return Turn{}, errNotStored
	}
	p := &scanner{b: data, i: len(head)}
	var t Turn
	n := bytes.Count(data, []byte(`{"role":`)) // an upper bound
	t.Messages = make([]Message, 0, n)
	for !p.eat(']') {
		if len(t.Messages) > 0 && !p.eat(',') {
			return Turn{}, errNotStored
		}
		m, ok := p.message()
		if !ok {
			return Turn{}, errNotStored
		}
		t.Messages = append(t.Messages, m)
	}
	extra, ok := p.members()
	if !ok || p.i != len(data) || len(t.Messages) == 0 {
		return Turn{}, errNotStored
	}
	t.Extra = extra
	return t, nil
}

// ParseStoredTurns is [ParseStoredTurn] for a JSON array of stored turns,
// such as a conversation's "turns" as Turn.MarshalJSON wrote them, joined
// by commas in brackets.
func ParseStoredTurns(data []byte) ([]Turn, error) {
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return nil, errNotStored
	}
	var out []Turn
	for i := 1; i < len(data)-1; {
		if len(out) > 0 {
			if data[i] != ',' {
				return nil, errNotStored
			}
			i++
		}
		end, ok := skipValue(data, i)
		if !ok || end > len(data)-1 {
			return nil, errNotStored
		}
		t, err := ParseStoredTurn(data[i:end:end])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		i = end
	}
	return out, nil
}

// mayHoldToolUse reports whether b, JSON, may hold a tool_use block: it
// names "tool_use", or it has an escape, with which a type can be written
// ("tool\u005fuse") that only parsing tells.
func mayHoldToolUse(b []byte) bool {
	return bytes.Contains(b, []byte(`"tool_use"`)) || bytes.Contains(b, []byte(`\u`))
}
