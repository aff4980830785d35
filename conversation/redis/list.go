package redis

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/mombot/mombot/conversation"
)

// The previous version kept a conversation in one list (format 2):
//
//	<prefix>conv:<phone>    list: the head, then the turns, oldest first
//
// Each turn was its element, its JSON as Turn.MarshalJSON writes it; the
// head was text:
//
//	2 <last activity, Unix µs>\n
//	<CRC-32C of turn 1's element, hex> <tool_use id, hex>...\n
//	...
//
// one line per turn, in the order of the turns. The conversation was the
// turns the head has lines for; an element after them (the turn of a save
// that was refused) was no part of it. A load that finds no hash reads the
// list, and the first save after the upgrade moves its turns that stay
// into the hash (fields "m1", "m2", ... with their lines, in the append
// script) and deletes it. Expire, Delete, Replace and List know the list
// too. It carried the conversation's TTL, so that an upgrade leaves none
// after the inactivity timeout.
const listVersion = "2"

// parseListHead reads the head of a list: the last activity (ok false if
// it is not a list head) and each turn's checksum, as written in its line
// ("-" or hex).
func parseListHead(head []byte) (lastMicros int64, sums [][]byte, ok bool) {
	first, rest, ok := cutHead(head, listVersion)
	if !ok {
		return 0, nil, false
	}
	lastMicros, err := strconv.ParseInt(string(first), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	sums = make([][]byte, 0, bytes.Count(rest, []byte{'\n'}))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		sum, _, _ := bytes.Cut(line, []byte{' '})
		sums = append(sums, sum)
	}
	return lastMicros, sums, true
}

// fromList reads a conversation from its list: its head, then its turns.
// ok is false when the list does not start with a list head (or is
// empty).
func (s *Store) fromList(ctx context.Context, phone string, elems [][]byte) (c conversation.Conversation, ok bool) {
	if len(elems) == 0 {
		return c, false
	}
	micros, sums, ok := parseListHead(elems[0])
	if !ok {
		return c, false
	}
	elems = elems[1:]
	if len(elems) >= len(sums) {
		elems = elems[:len(sums)]
	} else {
		sums = nil // fewer turns than lines, changed by hand: trust none
	}
	r := newTurnReader(phone, time.UnixMicro(micros), len(elems))
	for i, e := range elems {
		var sum []byte
		if sums != nil {
			sum = sums[i]
		}
		r.add(sum, e)
	}
	return s.repaired(ctx, r), true
}

// turnReader gathers a conversation's turns as a load reads them from any
// layout, counting those that do not decode and noting whether any was
// not known to be valid, for Store.repaired.
type turnReader struct {
	c           conversation.Conversation
	undecodable int
	foreign     bool
}

func newTurnReader(phone string, last time.Time, n int) *turnReader {
	return &turnReader{c: conversation.Conversation{Phone: phone, LastActive: last, Turns: make([]conversation.Turn, 0, n)}}
}

// add reads the stored turn elem whose line has the checksum sum (nil if
// none), see readTurn.
func (r *turnReader) add(sum, elem []byte) {
	t, trusted, err := readTurn(sum, elem)
	if err != nil {
		r.undecodable++
		return
	}
	r.foreign = r.foreign || !trusted
	r.c.Turns = append(r.c.Turns, t)
}

// readTurn reads a stored turn whose line has the checksum sum (nil if it
// has no line to trust): split without decoding again if the checksum
// matches, else decoded, and then trusted only if it carried the oldest
// layout's header with a matching checksum (decodeTurn).
func readTurn(sum, elem []byte) (t conversation.Turn, trusted bool, err error) {
	if sum != nil && checksumMatches(sum, elem) {
		if t, err := conversation.ParseStoredTurn(elem); err == nil {
			return t, true, nil
		}
	}
	return decodeTurn(elem)
}
