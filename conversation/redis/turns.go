package redis

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	mrand "math/rand/v2"
	"strconv"
	"strings"

	"github.com/mombot/mombot/conversation"
)

// A conversation is one hash (see the package doc): its head in the field
// "h", and each turn in a field of its own, whose name is in the head. A
// turn's value is the turn's JSON as Turn.MarshalJSON writes it. The head
// is text:
//
//	3 <last activity, Unix µs> <number of turns>\n
//	<field>:<CRC-32C of the turn's value, hex> <tool_use id's key>...\n
//	...
//
// one line per turn, in the order of the turns. The number of turns saves
// the append script counting the lines to apply the cap; a load goes by
// the lines. "3" is the format version
// (version 2 was a list, list.go; version 1 three keys, legacy.go). A turn
// that was not validated as it was saved, or whose value this version did
// not write (a turn moved over from an older layout), has "-" for its
// checksum. A load splits a value whose checksum matches its line without
// decoding or validating it again, and decodes and validates any other.
// The tool_use ids' keys (idKey: the first 64 bits of the id's SHA-1, in
// hex), each behind a space, let the append script check a new turn's ids
// with plain finds, without moving the turns through Lua; the field name
// and checksum are one word, so that no key can match them. Keys rather
// than the ids keep the head short whatever the ids' length: the script
// copies the head a few times a save, and under load each copy of cold
// memory costs about as much as the calls around it.
const (
	headVersion = "3"
	headField   = "h"
)

// newField returns the field name of a new turn: 64 random bits in
// unpadded base64url, 11 characters. Names are unique within a
// conversation by chance alone (about one in 10^18 for a save into a
// conversation of ten turns); the head ("h") and the turns moved over from
// an older layout ("m1", "m2", ...) are never of this form, and neither
// is a colon, a space or a newline.
func newField() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], mrand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// idKey returns the key of a tool_use id in the head: the first 64 bits of
// its SHA-1, in hex, as the scripts compute it with redis.sha1hex. Two ids
// share a key by chance alone (about one in 10^18 for a turn's id against
// a conversation's); tool_use ids come from the model, not from the
// people who write.
func idKey(id string) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// encodeTurn returns the value for turn, its line in the head after the
// field name's colon (without the newline) and its tool_use ids' keys.
// The line of a turn that was not validated has "-" for its checksum.
func encodeTurn(turn conversation.Turn, trusted bool) (elem []byte, line string, keys []string, err error) {
	elem, err = turn.MarshalJSON()
	if err != nil {
		return nil, "", nil, err
	}
	ids := turn.ToolUseIDs()
	keys = make([]string, len(ids))
	n := 8
	for i, id := range ids {
		keys[i] = idKey(id)
		n += 1 + len(keys[i])
	}
	b := make([]byte, 0, n)
	if trusted {
		b = strconv.AppendUint(b, uint64(conversation.Checksum(elem)), 16)
	} else {
		b = append(b, '-')
	}
	for _, k := range keys {
		b = append(b, ' ')
		b = append(b, k...)
	}
	return elem, string(b), keys, nil
}

// appendHead appends a head for a conversation last active at lastMicros
// to b, with a line for each turn: its field and what follows the colon.
func appendHead(b []byte, lastMicros int64, fields, lines []string) []byte {
	b = append(b, headVersion+" "...)
	b = strconv.AppendInt(b, lastMicros, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(lines)), 10)
	b = append(b, '\n')
	for i, l := range lines {
		b = append(b, fields[i]...)
		b = append(b, ':')
		b = append(b, l...)
		b = append(b, '\n')
	}
	return b
}

// headLine is what a load needs of a turn's line in the head.
type headLine struct {
	field []byte
	sum   []byte // "-" or hex
}

// parseHead reads a head: the last activity (ok false if the head is not
// one this version reads, such as a newer version's) and each turn's line.
func parseHead(head []byte) (lastMicros int64, lines []headLine, ok bool) {
	first, rest, ok := cutHead(head, headVersion)
	if !ok {
		return 0, nil, false
	}
	first, count, found := bytes.Cut(first, []byte{' '})
	if !found || len(count) == 0 || strings.Trim(string(count), "0123456789") != "" {
		return 0, nil, false
	}
	lastMicros, err := strconv.ParseInt(string(first), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	lines = make([]headLine, 0, bytes.Count(rest, []byte{'\n'}))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		word, _, _ := bytes.Cut(line, []byte{' '})
		field, sum, found := bytes.Cut(word, []byte{':'})
		if !found {
			return 0, nil, false
		}
		lines = append(lines, headLine{field: field, sum: sum})
	}
	return lastMicros, lines, true
}

// cutHead splits a head of the given format version, its own or the
// list's, into its first line after the version and the lines after it.
// ok is false unless the head starts with the version and every line ends
// in a newline, as this version writes them.
func cutHead(head []byte, version string) (first, rest []byte, ok bool) {
	rest, ok = bytes.CutPrefix(head, []byte(version+" "))
	if !ok {
		return nil, nil, false
	}
	first, rest, ok = bytes.Cut(rest, []byte{'\n'})
	if !ok || len(rest) > 0 && rest[len(rest)-1] != '\n' {
		return nil, nil, false
	}
	return first, rest, true
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
