package redis

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mombot/mombot/conversation"
)

// A conversation is one list (see the package doc): its head, then its
// turns, oldest first. A turn's element is the turn's JSON as
// Turn.MarshalJSON writes it. The head is text:
//
//	2 <last activity, Unix µs>\n
//	<CRC-32C of turn 1's element, hex> <tool_use id, hex>...\n
//	...
//
// one line per turn, in the order of the turns. "2" is the format version
// (version 1 was the layout of three keys, legacy.go). A turn that was not
// validated as it was saved, or whose element this version did not write
// (a turn moved over from the older layout), has "-" for its checksum. A
// load splits an element whose checksum matches its line without decoding
// or validating it again, and decodes and validates any other. The ids,
// hex, let the append script check a new turn's ids with plain finds,
// without moving the turns through Lua.
const headVersion = "2"

// encodeTurn returns the element for turn, its line in the head (without
// the newline) and its tool_use ids in hex. The line of a turn that was not
// validated has "-" for its checksum.
func encodeTurn(turn conversation.Turn, trusted bool) (elem []byte, line string, hexIDs []string, err error) {
	elem, err = turn.MarshalJSON()
	if err != nil {
		return nil, "", nil, err
	}
	ids := turn.ToolUseIDs()
	n := 8
	hexIDs = make([]string, len(ids))
	for i, id := range ids {
		hexIDs[i] = hex.EncodeToString([]byte(id))
		n += 1 + len(hexIDs[i])
	}
	var b strings.Builder
	b.Grow(n)
	if trusted {
		b.WriteString(strconv.FormatUint(uint64(conversation.Checksum(elem)), 16))
	} else {
		b.WriteByte('-')
	}
	for _, h := range hexIDs {
		b.WriteByte(' ')
		b.WriteString(h)
	}
	return elem, b.String(), hexIDs, nil
}

// appendHead appends a head for a conversation last active at lastMicros
// whose turns have lines to b.
func appendHead(b []byte, lastMicros int64, lines []string) []byte {
	b = append(b, headVersion+" "...)
	b = strconv.AppendInt(b, lastMicros, 10)
	b = append(b, '\n')
	for _, l := range lines {
		b = append(b, l...)
		b = append(b, '\n')
	}
	return b
}

// parseHead reads a head: the last activity (ok false if the head is not
// one this version reads, such as a newer version's) and each turn's
// checksum, as written in its line ("-" or hex).
func parseHead(head []byte) (lastMicros int64, sums [][]byte, ok bool) {
	rest, found := bytes.CutPrefix(head, []byte(headVersion+" "))
	if !found {
		return 0, nil, false
	}
	first, rest, found := bytes.Cut(rest, []byte{'\n'})
	if !found {
		return 0, nil, false
	}
	lastMicros, err := strconv.ParseInt(string(first), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	sums = make([][]byte, 0, bytes.Count(rest, []byte{'\n'}))
	for len(rest) > 0 {
		var line []byte
		line, rest, found = bytes.Cut(rest, []byte{'\n'})
		if !found {
			return 0, nil, false // not written by this version
		}
		sum, _, _ := bytes.Cut(line, []byte{' '})
		sums = append(sums, sum)
	}
	return lastMicros, sums, true
}

// checksumMatches reports whether sum, hex from a head line, is elem's
// checksum.
func checksumMatches(sum, elem []byte) bool {
	if len(sum) == 0 || len(sum) > 8 {
		return false
	}
	v, err := strconv.ParseUint(string(sum), 16, 32)
	return err == nil && uint32(v) == conversation.Checksum(elem)
}

// The older layout's elements (format 1) carried their checksum and tool
// ids in a first member of the turn's JSON, which the turns moved over
// from it keep until they leave the conversation:
//
//	{"_mombot":"1 <CRC-32C of the turn's JSON, hex> <tool_use id, hex>...","messages":[...],...}
//
// The turn's JSON is the element with that member taken out. Elements of
// still older versions are the turn's JSON alone.
const (
	headerOpen = `{"_mombot":"`
	headerKey  = "_mombot"
	headerV1   = "1"
)

// decodeTurn reads an element whose checksum is not in the head: one moved
// over from the older layout, one saved without validation, or one changed
// since. It may change elem. trusted reports whether the element carried
// the older layout's header with a matching checksum; any other is decoded
// and must be validated by the caller.
func decodeTurn(elem []byte) (t conversation.Turn, trusted bool, err error) {
	if rest, ok := bytes.CutPrefix(elem, []byte(headerOpen)); ok {
		end := bytes.IndexByte(rest, '"')
		if end > 0 && end+1 < len(rest) && rest[end+1] == ',' {
			fields := strings.Fields(string(rest[:end]))
			if len(fields) >= 2 && fields[0] == headerV1 {
				sum, perr := strconv.ParseUint(fields[1], 16, 32)
				data := rest[end+1:]
				data[0] = '{' // the turn's JSON: the element without the header member
				if perr == nil && uint32(sum) == conversation.Checksum(data) {
					if t, err := conversation.ParseStoredTurn(data); err == nil {
						return t, true, nil
					}
				}
				data[0] = ','
			}
		}
	}
	if err := json.Unmarshal(elem, &t); err != nil {
		return conversation.Turn{}, false, err
	}
	if _, ok := t.Extra[headerKey]; ok {
		delete(t.Extra, headerKey)
		if len(t.Extra) == 0 {
			t.Extra = nil
		}
	}
	return t, false, nil
}
