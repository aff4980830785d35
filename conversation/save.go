package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
)

// The save's one pass. Memory.Save used to sanitise each message
// (Sanitize: compact, check the JSON, replace base64 images and documents),
// then validate the turn (ValidateTurn: check the UTF-8 and the JSON once
// more, split and parse every block), and the store then encoded it
// (Turn.MarshalJSON: check every content's JSON a third time) and took its
// tool ids (Turn.ToolUseIDs: split and parse the tool_use blocks again).
// prepareTurn does the same work once: each content is compacted and
// checked once, split and parsed once; the rules of ValidateTurn
// (checkTurn) read those blocks and collect the tool ids as they go; and
// the stored bytes are written from what was checked, without checking it
// again. The turn it returns carries its bytes and ids (savedForm) to the
// store, whose Turn.MarshalJSON and Turn.ToolUseIDs return them.
// TestSaveGolden holds the bytes, ids and errors to what the separate
// steps gave, and FuzzPrepareTurn holds the two ways together.

// savedForm is a turn's stored form as [Memory.Save] works it out: its
// bytes as [Turn.MarshalJSON] writes them and its ids as [Turn.ToolUseIDs]
// gives them. It belongs to the Turn that Save hands to [Store.Append],
// whose messages are not changed afterwards; first, n and extras tell it
// from a Turn whose messages or extra keys were replaced since.
type savedForm struct {
	data   []byte
	ids    []string
	first  *Message
	n      int
	extras int
}

// of reports whether s is the stored form of t.
func (s *savedForm) of(t Turn) bool {
	return s != nil && len(t.Messages) == s.n && s.n > 0 && &t.Messages[0] == s.first && len(t.Extra) == s.extras
}

// prepareTurn returns turn as [Memory.Save] stores it, with its stored form:
// what sanitising each message ([Sanitize]), validating the result
// ([ValidateTurn]) and encoding it ([Turn.MarshalJSON], [Turn.ToolUseIDs])
// give, in one pass, with the same errors, which wrap [ErrInvalidTurn]. The
// returned turn shares no memory with turn.
func prepareTurn(turn Turn) (Turn, error) {
	extra, err := cleanExtra(turn.Extra, "messages")
	if err != nil {
		return Turn{}, fmt.Errorf("%w: %v", ErrInvalidTurn, err)
	}
	n := len(turn.Messages)
	clean := Turn{Messages: make([]Message, n), Extra: extra}
	// The usual turn's parse stays on the stack; its blocks, every
	// message's one after another, take one allocation.
	var parsedBuf [8]parsedContent
	parsed := parsedBuf[:0]
	if n > len(parsedBuf) {
		parsed = make([]parsedContent, 0, n)
	}
	parsed = parsed[:n]
	blocks := make([]Block, 0, 2*n)
	for i, msg := range turn.Messages {
		if clean.Messages[i], blocks, parsed[i], err = sanitizeParsed(msg, blocks); err != nil {
			return Turn{}, fmt.Errorf("%w: messages.%d: %v", ErrInvalidTurn, i, err)
		}
	}
	ids, err := checkTurn(clean.Messages, func(i int) (bool, []Block, error) {
		return parsed[i].validUTF8, parsed[i].blocks, parsed[i].err
	})
	if err != nil {
		return Turn{}, err
	}
	data := encodeSaved(clean)
	clean.saved = &savedForm{data: data, ids: ids, first: &clean.Messages[0], n: n, extras: len(clean.Extra)}
	return clean, nil
}

// parsedContent is a sanitised message's content as checkTurn reads it:
// whether it is valid UTF-8 and, if it is, its blocks or the error
// [Message.Blocks] gives.
type parsedContent struct {
	validUTF8 bool
	blocks    []Block
	err       error
}

// sanitizeParsed is [Sanitize] for a message of a turn being saved, with
// the same result and errors, that also parses the content's blocks once,
// appending them to all. The content it returns may share memory with
// m's (encodeSaved gives the turn its own). It is always compact, so
// that checkTurn's tool ids are Turn.ToolUseIDs's.
func sanitizeParsed(m Message, all []Block) (Message, []Block, parsedContent, error) {
	// One pass checks the JSON and tells whether compact would change it
	// and whether it is valid UTF-8. Compacting valid JSON keeps it valid
	// and leaves its strings, so their UTF-8, as they were.
	content := m.Content
	facts := scanJSON(content)
	if !facts.valid {
		return Message{}, all, parsedContent{}, errors.New("content is not valid JSON")
	}
	if facts.spaced {
		content = compact(content)
	}
	// Sanitize replaces blocks only in content that names "image" or
	// "document"; the blocks tell, without a search of the bytes, when
	// there is nothing it could replace or fail on: no image or document
	// block and no tool_result with blocks of its own.
	start := len(all)
	p := parsedContent{validUTF8: facts.validUTF8}
	if p.validUTF8 {
		all, p.err = appendBlocks(all, content)
		p.blocks = all[start:len(all):len(all)]
	}
	if content[0] == '[' && (!p.validUTF8 || p.err != nil || replaceable(p.blocks)) &&
		(bytes.Contains(content, []byte(`"image"`)) || bytes.Contains(content, []byte(`"document"`))) {
		out, changed, err := sanitizeBlocks(content)
		if err != nil {
			return Message{}, all, parsedContent{}, err
		}
		if changed {
			if needsCompact(out) {
				out = compact(out) // what Turn.MarshalJSON would write
			}
			content = out
			all = all[:start]
			p = parsedContent{validUTF8: utf8.Valid(content)}
			if p.validUTF8 {
				all, p.err = appendBlocks(all, content)
				p.blocks = all[start:len(all):len(all)]
			}
		}
	}
	extra, err := cleanExtra(m.Extra, "role", "content")
	if err != nil {
		return Message{}, all, parsedContent{}, err
	}
	return Message{Role: m.Role, Content: content[:len(content):len(content)], Extra: extra}, all, p, nil
}

// replaceable reports whether sanitizeBlocks could replace or fail on a
// block of blocks: whether one is an image or a document, or a tool_result
// whose content is blocks.
func replaceable(blocks []Block) bool {
	for _, b := range blocks {
		if b.Type == "image" || b.Type == "document" || b.Type == "tool_result" && len(b.Content) > 0 && b.Content[0] == '[' {
			return true
		}
	}
	return false
}

// appendBlocks appends the blocks of content, compact, valid JSON in valid
// UTF-8, to dst, as [Message.Blocks] gives them, but for a string content's
// text block, whose Raw it leaves out.
func appendBlocks(dst []Block, content []byte) ([]Block, error) {
	switch content[0] {
	case '"':
		s, err := stringField(content)
		if err != nil {
			return dst, err
		}
		return append(dst, Block{Type: "text", Text: s, HasText: true}), nil
	case '[':
	default:
		return dst, errors.New("content is neither a string nor an array of blocks")
	}
	for i, k := 1, 0; i < len(content)-1; k++ {
		if content[i] == ',' {
			i++
		}
		// The usual block is read in the one scan that finds its end;
		// an unusual one is cut out and handed to encoding/json, as
		// parseBlockOf does.
		var b Block
		var err error
		if f, end, ok := scanBlockFields(content, i); ok {
			b, err = blockFrom(f, content[i:end:end])
			i = end
		} else {
			end, ok := skipValue(content, i)
			if !ok || end <= i {
				return dst, errors.New("content is not a JSON array") // not valid JSON: not reached
			}
			b, err = ParseBlock(content[i:end:end])
			i = end
		}
		if err != nil {
			return dst, fmt.Errorf("block %d: %w", k, err)
		}
		dst = append(dst, b)
	}
	return dst, nil
}

// encodeSaved returns t's bytes as Turn.MarshalJSON writes them, for a
// turn whose contents and extra keys are compact, valid JSON (a sanitised
// turn's), without checking them again; and points each message's content
// at its bytes in them, so that t shares no memory with what it was made
// from.
func encodeSaved(t Turn) []byte {
	size := len(`{"messages":[]}`) + extraSize(t.Extra)
	for _, m := range t.Messages {
		size += len(`{"role":"","content":},`) + len(m.Role) + len(m.Content) + extraSize(m.Extra)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"messages":[`...)
	var offBuf [8]int
	offs := offBuf[:0]
	for i, m := range t.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendQuoted(b, m.Role)
		b = append(b, `,"content":`...)
		offs = append(offs, len(b))
		b = append(b, m.Content...)
		b = appendExtra(b, m.Extra)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = appendExtra(b, t.Extra)
	b = append(b, '}')
	for i, off := range offs {
		end := off + len(t.Messages[i].Content)
		t.Messages[i].Content = b[off:end:end]
	}
	return b[:len(b):len(b)]
}

// extraSize is about what appendExtra writes for extra.
func extraSize(extra map[string]json.RawMessage) int {
	n := 0
	for k, v := range extra {
		n += len(k) + len(v) + 4
	}
	return n
}

// appendExtra is encodeExtra for the extra keys of a sanitised turn or
// message: compact, valid JSON, without the keys encodeExtra skips.
func appendExtra(b []byte, extra map[string]json.RawMessage) []byte {
	if len(extra) == 0 {
		return b
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		b = append(b, ',')
		b = appendQuoted(b, k)
		b = append(b, ':')
		b = append(b, extra[k]...)
	}
	return b
}

// appendQuoted appends quote(s) to b.
func appendQuoted(b []byte, s string) []byte {
	if !plain(s) {
		return append(b, quote(s)...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
