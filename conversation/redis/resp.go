package redis

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// replyError is an error reply of Redis read from a raw reply, such as
// "WRONGTYPE Operation against a key holding the wrong kind of value".
type replyError string

func (e replyError) Error() string { return string(e) }

// errMalformed is returned for a raw reply that is not what was asked for.
var errMalformed = errors.New("malformed reply")

// splitArray returns the bulk strings of raw, the RESP reply of a command
// that answers with an array of them (LRANGE) or a map of them (HGETALL,
// whose keys and values then alternate; RESP2 sends it as an array), as
// slices of raw: the elements are not copied again after go-redis read the
// reply. An error reply is returned as a replyError.
func splitArray(raw []byte) ([][]byte, error) {
	line, rest, ok := cutLine(raw)
	if !ok || len(line) == 0 {
		return nil, errMalformed
	}
	switch line[0] {
	case '-':
		return nil, replyError(line[1:])
	case '!': // RESP3 blob error: !<len>\r\n<text>\r\n
		text, _, err := bulk(line, rest)
		if err != nil {
			return nil, err
		}
		return nil, replyError(text)
	case '*', '%':
	default:
		return nil, fmt.Errorf("%w: %q where an array belongs", errMalformed, line[:1])
	}
	n, err := strconv.Atoi(string(line[1:]))
	if line[0] == '%' && n <= len(rest) {
		n *= 2 // a key and a value per entry
	}
	if err != nil || n < 0 || n > len(rest)/4 { // an element takes at least 4 bytes
		return nil, errMalformed
	}
	out := make([][]byte, n)
	for i := range out {
		line, rest, ok = cutLine(rest)
		if !ok || len(line) == 0 || line[0] != '$' {
			return nil, errMalformed
		}
		if out[i], rest, err = bulk(line, rest); err != nil {
			return nil, err
		}
	}
	if len(rest) != 0 {
		return nil, errMalformed
	}
	return out, nil
}

// cutLine splits b at its first CRLF.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+2:], true
}

// bulk reads the body of a bulk string whose header line ($<len>) is line
// from rest. The body's capacity is cut to its length, so that appending
// to it cannot overwrite what follows.
func bulk(line, rest []byte) (body, after []byte, err error) {
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 || n > len(rest)-2 || rest[n] != '\r' || rest[n+1] != '\n' {
		return nil, nil, errMalformed
	}
	return rest[:n:n], rest[n+2:], nil
}
