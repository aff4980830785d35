package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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
// messages, in order, or nil if it has none.
func (t Turn) ToolUseIDs() []string {
	var ids []string
	for _, m := range t.Messages {
		if m.Role != RoleAssistant || !bytes.Contains(m.Content, []byte(`"tool_use"`)) {
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
		if raw := c[i:end]; bytes.Contains(raw, []byte(`"tool_use"`)) {
			if b, err := ParseBlock(raw); err == nil && b.Type == "tool_use" {
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

// scanner walks compact JSON that is known to be valid.
type scanner struct {
	b []byte
	i int
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scanner) lit(s string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		p.i += len(s)
		return true
	}
	return false
}

// message reads {"role":R,"content":C,extra...}.
func (p *scanner) message() (Message, bool) {
	if !p.lit(`{"role":`) {
		return Message{}, false
	}
	role, ok := p.str()
	if !ok || !p.lit(`,"content":`) {
		return Message{}, false
	}
	content, ok := p.value()
	if !ok {
		return Message{}, false
	}
	extra, ok := p.members()
	if !ok {
		return Message{}, false
	}
	return Message{Role: role, Content: content, Extra: extra}, true
}

// members reads the ,"key":value members up to the object's '}', which it
// consumes.
func (p *scanner) members() (map[string]json.RawMessage, bool) {
	var extra map[string]json.RawMessage
	for !p.eat('}') {
		if !p.eat(',') {
			return nil, false
		}
		k, ok := p.str()
		if !ok || !p.eat(':') {
			return nil, false
		}
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = v
	}
	return extra, true
}

// str reads a JSON string and returns its value.
func (p *scanner) str() (string, bool) {
	start := p.i
	end, ok := skipString(p.b, start)
	if !ok {
		return "", false
	}
	p.i = end
	raw := p.b[start:end]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// value reads one JSON value and returns its bytes, capacity cut.
func (p *scanner) value() (json.RawMessage, bool) {
	start := p.i
	end, ok := skipValue(p.b, start)
	if !ok || end == start {
		return nil, false
	}
	p.i = end
	return p.b[start:end:end], true
}

// skipValue returns the index just past the compact JSON value at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // a number, true, false or null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		return j, true
	}
}

// skipString returns the index just past the JSON string at b[i], which is
// a '"'. It jumps from quote to quote, so a long text costs little.
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		escapes := 0
		for q := j - 1; q > i && b[q] == '\\'; q-- {
			escapes++
		}
		j++
		if escapes%2 == 0 {
			return j, true
		}
	}
}

// splitArray returns the elements of the JSON array content, if it is valid
// JSON: one scan to check it and a quick one to split it, where
// json.Unmarshal into []json.RawMessage scans twice and copies. White space
// around the elements is left out, as json.Unmarshal leaves it out.
func splitArray(content []byte) ([]json.RawMessage, bool) {
	if !json.Valid(content) {
		return nil, false
	}
	ws := func(i int) int {
		for i < len(content) && (content[i] == ' ' || content[i] == '\n' || content[i] == '\t' || content[i] == '\r') {
			i++
		}
		return i
	}
	out := []json.RawMessage{}
	i := ws(1)
	if i < len(content) && content[i] == ']' {
		return out, true
	}
	for i < len(content) {
		end, ok := skipValue(content, i)
		if !ok {
			return nil, false
		}
		v := bytes.TrimRight(content[i:end], " \n\t\r")
		out = append(out, v[:len(v):len(v)])
		i = ws(end)
		if i >= len(content) {
			return nil, false
		}
		switch content[i] {
		case ']':
			return out, true
		case ',':
			i = ws(i + 1)
		default:
			return nil, false
		}
	}
	return nil, false
}

// blockKeys are the members of a content block that blockFields reads, by
// their JSON names. TestBlockKeysMatchBlockFields holds the two together.
var blockKeys = [...]string{"type", "id", "name", "tool_use_id", "text", "input", "content", "is_error", "source"}

// parseValidBlock is ParseBlock for a block known to be valid JSON, such as
// one of rawBlocks's: the members ParseBlock reads are found by scanning,
// without decoding the others (a tool_result's long content is skipped from
// quote to quote). Anything unusual (white space, escaped or differently
// cased keys, a "type" that is not a string, invalid UTF-8) goes to ParseBlock, so the
// result and the errors are ParseBlock's.
func parseValidBlock(raw json.RawMessage) (Block, error) {
	f, ok := scanBlockFields(raw)
	if !ok {
		return ParseBlock(raw)
	}
	return blockFrom(f, raw)
}

func scanBlockFields(raw []byte) (blockFields, bool) {
	var f blockFields
	p := &scanner{b: raw}
	// encoding/json turns invalid UTF-8 in strings into U+FFFD.
	if !utf8.Valid(raw) || !p.eat('{') {
		return f, false
	}
	if p.eat('}') {
		return f, p.i == len(raw)
	}
	for {
		kstart := p.i
		key, ok := p.str()
		if !ok || bytes.IndexByte(raw[kstart:p.i], '\\') >= 0 || !p.eat(':') {
			return f, false
		}
		val, ok := p.value()
		if !ok {
			return f, false
		}
		switch key {
		case "type":
			switch {
			case string(val) == "null":
				f.Type = nil
			case val[0] == '"' && bytes.IndexByte(val, '\\') < 0:
				t := string(val[1 : len(val)-1])
				f.Type = &t
			default:
				return f, false
			}
		case "id":
			f.ID = val
		case "name":
			f.Name = val
		case "tool_use_id":
			f.ToolUseID = val
		case "text":
			f.Text = val
		case "input":
			f.Input = val
		case "content":
			f.Content = val
		case "is_error":
			f.IsError = val
		case "source":
			f.Source = val
		default:
			for _, k := range blockKeys {
				if strings.EqualFold(key, k) {
					return f, false // encoding/json would match it
				}
			}
		}
		if p.eat('}') {
			return f, p.i == len(raw)
		}
		if !p.eat(',') {
			return f, false
		}
	}
}
