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
// A conversation's turns have consecutive seqs (a save adds the seq after
// the last, the cap drops the oldest, Replace numbers from 1), so the text
// gives, on its first line, the newest turn's seq and the conversation's
// last_active as the index was written with it; then one line per turn,
// oldest first, of its ids, each a Go quoted string (strconv.Quote) after
// a space:
//
//	43 1771929300123456000
//	 "toolu_01A"
//
//	 "toolu_01B" "toolu_01C"
//
// is turns 41 to 43. A quoted id holds no raw newline and no unescaped
// quote, so the lines and the ids split without ambiguity, and any id the
// Messages API may send fits. The text keeps its length from one save to
// the next while the ids do (so the row is rewritten in place), unless the
// newest seq gains a digit.
//
// The last_active on the first line tells whether a writer that does not
// know the index (a process of an older version, still running while a
// newer one opened the database) saved since: it sets last_active and
// leaves the index as it was.
type turnIndex []indexEntry

// indexEntry is one turn of a turnIndex.
type indexEntry struct {
	seq int64
	// ids is the turn's line: its ids, quoted, each after a space; parsed
	// only when a save checks a new turn against them.
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

// consecutive reports whether x's seqs follow each other, which text
// needs.
func (x turnIndex) consecutive() bool {
	for i := 1; i < len(x); i++ {
		if x[i].seq != x[i-1].seq+1 {
			return false
		}
	}
	return true
}

// text encodes x, whose seqs must be consecutive, as the turn_ids column
// holds it, for a conversation last active at stamp (Unix nanoseconds).
func (x turnIndex) text(stamp int64) string {
	n := 42
	for _, e := range x {
		n += len(e.ids) + 1
	}
	b := make([]byte, 0, n)
	if len(x) == 0 {
		b = append(b, '0')
	} else {
		b = strconv.AppendInt(b, x[len(x)-1].seq, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, stamp, 10)
	b = append(b, '\n')
	for _, e := range x {
		b = append(b, e.ids...)
		b = append(b, '\n')
	}
	return string(b)
}

// matches reports whether x describes turn rows numbering n, from seq lo
// to hi: with seqs unique, the rows are then exactly x's.
func (x turnIndex) matches(n, lo, hi int64) bool {
	if int64(len(x)) != n {
		return false
	}
	return n == 0 || (x[0].seq == lo && x[len(x)-1].seq == hi)
}

// parseTurnIndex decodes what turnIndex.text wrote, checking the whole
// syntax, ids included, and returns the index and its stamp.
func parseTurnIndex(s string) (turnIndex, int64, error) {
	head, s, ok := strings.Cut(s, "\n")
	if !ok {
		return nil, 0, errBadIndex
	}
	num, at, _ := strings.Cut(head, " ")
	last, err1 := strconv.ParseInt(num, 10, 64)
	stamp, err2 := strconv.ParseInt(at, 10, 64)
	n := int64(strings.Count(s, "\n"))
	if err1 != nil || err2 != nil || strconv.FormatInt(last, 10) != num || strconv.FormatInt(stamp, 10) != at ||
		last < n || (n == 0 && last != 0) || !strings.HasSuffix("\n"+s, "\n") {
		return nil, 0, errBadIndex
	}
	x := make(turnIndex, 0, n)
	for seq := last - n + 1; s != ""; seq++ {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		e := indexEntry{seq: seq, ids: line}
		if _, err := e.toolIDs(nil); err != nil {
			return nil, 0, err
		}
		x = append(x, e)
	}
	return x, stamp, nil
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
