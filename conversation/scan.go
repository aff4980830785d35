package conversation

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The scanner of this file reads JSON that is known to be valid, and mostly
// compact, by jumping from quote to quote: most of a turn's bytes are in
// strings, which bytes.IndexByte crosses far faster than encoding/json's
// byte-by-byte state machine. It splits stored turns (ParseStoredTurn) and
// content arrays, and reads the members of a block that the memory rules
// need; what it does not expect it hands back to encoding/json.

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
	if !validJSON(content) {
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
func parseValidBlock(raw json.RawMessage) (Block, error) { return parseBlockOf(raw, false) }

// parseBlockOf is parseValidBlock, for a block known to be valid UTF-8 too
// when validUTF8 is set (a block of a content that was checked whole).
func parseBlockOf(raw json.RawMessage, validUTF8 bool) (Block, error) {
	// encoding/json turns invalid UTF-8 in strings into U+FFFD.
	if validUTF8 || utf8.Valid(raw) {
		if f, end, ok := scanBlockFields(raw, 0); ok && end == len(raw) {
			return blockFrom(f, raw)
		}
	}
	return ParseBlock(raw)
}

// parseBlock is ParseBlock, through parseValidBlock when raw is valid JSON.
func parseBlock(raw json.RawMessage) (Block, error) {
	if validJSON(raw) {
		return parseValidBlock(raw)
	}
	return ParseBlock(raw)
}

// scanBlockFields reads the members of the block object at b[i], in
// compact, valid JSON whose strings are valid UTF-8, and returns the index
// just past the object, so that a caller walking an array of blocks need
// not find each block's end first and then read the block again. It
// reports false for anything unusual (not an object, an escaped or
// differently cased key, a "type" that is neither a plain string nor
// null), which the caller hands to encoding/json ([ParseBlock]).
func scanBlockFields(b []byte, i int) (blockFields, int, bool) {
	var f blockFields
	p := &scanner{b: b, i: i}
	if !p.eat('{') {
		return f, 0, false
	}
	if p.eat('}') {
		return f, p.i, true
	}
	for {
		// The key's bytes are its value: one with an escape goes to
		// encoding/json.
		kstart := p.i
		kend, ok := skipString(b, kstart)
		if !ok {
			return f, 0, false
		}
		key := b[kstart+1 : kend-1]
		p.i = kend
		if bytes.IndexByte(key, '\\') >= 0 || !p.eat(':') {
			return f, 0, false
		}
		val, ok := p.value()
		if !ok {
			return f, 0, false
		}
		switch string(key) {
		case "type":
			switch {
			case string(val) == "null":
				f.Type = nil
			case val[0] == '"' && bytes.IndexByte(val, '\\') < 0:
				f.Type = blockType(val[1 : len(val)-1])
			default:
				return f, 0, false
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
				if bytes.EqualFold(key, []byte(k)) {
					return f, 0, false // encoding/json would match it
				}
			}
		}
		if p.eat('}') {
			return f, p.i, true
		}
		if !p.eat(',') {
			return f, 0, false
		}
	}
}

// blockTypes are the block types a turn holds most, so that naming one
// costs no allocation.
var blockTypes = [...]string{"text", "tool_use", "tool_result", "image", "document", "thinking",
	"redacted_thinking", "server_tool_use", "web_search_tool_result", "search_result"}

// blockType returns a pointer to the string t.
func blockType(t []byte) *string {
	for i := range blockTypes {
		if string(t) == blockTypes[i] {
			return &blockTypes[i]
		}
	}
	s := string(t)
	return &s
}
