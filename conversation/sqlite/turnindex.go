package sqlite

import (
	"errors"
	"strconv"
	"strings"
)

// turnIndex is what a conversation's turn_ids column holds: the seq and
// tool_use ids of each of its turns, oldest first, so that a save checks a
// new turn's ids, and finds the row that the cap drops, from the row it
// reads and writes anyway (the conversation's) instead of reading the turns.
//
// It is text, one line per turn: the seq, then each id as a Go quoted
// string (strconv.Quote), separated by spaces:
//
//	41 "toolu_01A"
//	42
//	43 "toolu_01B" "toolu_01C"
//
// A quoted id holds no raw space-quote pair nor newline, so the lines and
// the ids split without ambiguity, and any id the Messages API may send
// fits.
type turnIndex []indexEntry

// indexEntry is one turn of a turnIndex.
type indexEntry struct {
	seq int64
	// ids is the rest of the turn's line: its ids, quoted, each after a
	// space; parsed only when a save checks a new turn against them.
	ids string
}

// errBadIndex is returned by parseTurnIndex for text it did not write.
var errBadIndex = errors.New("sqlite: malformed turn_ids")

// entry returns the index entry of the turn with seq and ids.
func entry(seq int64, ids []string) indexEntry {
	var b strings.Builder
	for _, id := range ids {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(id))
	}
	return indexEntry{seq: seq, ids: b.String()}
}

// String encodes x as the turn_ids column holds it.
func (x turnIndex) String() string {
	var b strings.Builder
	for _, e := range x {
		b.WriteString(strconv.FormatInt(e.seq, 10))
		b.WriteString(e.ids)
		b.WriteByte('\n')
	}
	return b.String()
}

// seqs returns x's seqs separated by spaces, as the save's query lists the
// stored rows' (group_concat of seq, ' '), so that one comparison tells
// whether the index describes the rows.
func (x turnIndex) seqs() string {
	b := make([]byte, 0, 8*len(x))
	for i, e := range x {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, e.seq, 10)
	}
	return string(b)
}

// parseTurnIndex decodes what turnIndex.String wrote, checking the whole
// syntax (ids included) and that seqs increase.
func parseTurnIndex(s string) (turnIndex, error) {
	x := make(turnIndex, 0, strings.Count(s, "\n"))
	for s != "" {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return nil, errBadIndex
		}
		s = rest
		num, ids, _ := strings.Cut(line, " ")
		seq, err := strconv.ParseInt(num, 10, 64)
		if err != nil || (len(x) > 0 && seq <= x[len(x)-1].seq) {
			return nil, errBadIndex
		}
		if ids != "" {
			ids = " " + ids
		}
		e := indexEntry{seq: seq, ids: ids}
		if _, err := e.toolIDs(nil); err != nil {
			return nil, err
		}
		x = append(x, e)
	}
	return x, nil
}

// toolIDs appends e's ids to dst.
func (e indexEntry) toolIDs(dst []string) ([]string, error) {
	for s := e.ids; s != ""; {
		if s[0] != ' ' {
			return dst, errBadIndex
		}
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil || q[0] != '"' {
			return dst, errBadIndex
		}
		id, err := strconv.Unquote(q)
		if err != nil {
			return dst, errBadIndex
		}
		dst = append(dst, id)
		s = s[1+len(q):]
	}
	return dst, nil
}
