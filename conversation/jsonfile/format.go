package jsonfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/mombot/mombot/conversation"
)

// entry is one top-level member of the file.
type entry struct {
	// raw is set for a member that is not a conversation object; it is
	// written back unchanged and never served.
	raw json.RawMessage

	lastActive time.Time
	// badTime is set when last_active could not be read: the conversation
	// counts as expired (lastActive is zero) and the value is written back
	// as it was, or left out if it was missing, rather than as a made-up
	// time that other readers of the file would reject.
	badTime *json.RawMessage
	extra   map[string]json.RawMessage // other keys of the conversation object

	// enc is the member's value as it is written in the file (indented),
	// computed once per change so a save encodes only what changed. It is
	// the only copy of the turns in memory, so the store holds about the
	// file's size: a load takes the turns out of it again (see turns).
	enc []byte
	// turnsAt and turnsEnd are where the "turns" array lies in enc
	// compacted, which is the bytes encode indented.
	turnsAt, turnsEnd int
	nturns            int
	// ids holds each turn's tool_use ids, for Append's check that a new
	// turn reuses none; nil if no turn has any.
	ids [][]string
}

// turns returns the entry's turns, taken out of enc: its turns were
// validated when they were parsed or saved, and enc holds them as
// Turn.MarshalJSON wrote them, indented, so compacting gives those bytes
// back to split without decoding. The turns share no memory with e.
func (e *entry) turns() ([]conversation.Turn, error) {
	if e.nturns == 0 {
		return nil, nil
	}
	c := compactJSON(make([]byte, 0, len(e.enc)), e.enc)
	if e.turnsEnd > len(c) {
		return nil, errors.New("cached conversation is shorter than recorded")
	}
	turns, err := conversation.ParseStoredTurns(c[e.turnsAt:e.turnsEnd])
	if err != nil {
		return nil, fmt.Errorf("cached conversation: %w", err)
	}
	return turns, nil
}

// compactJSON appends src, valid JSON, to dst without the white space
// outside strings. Strings are copied whole, found from quote to quote.
func compactJSON(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case ' ', '\n', '\t', '\r':
			i++
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(src[j:], '"')
				if k < 0 {
					return append(dst, src[i:]...) // not valid JSON; not ours
				}
				j += k
				escapes := 0
				for q := j - 1; q > i && src[q] == '\\'; q-- {
					escapes++
				}
				j++
				if escapes%2 == 0 {
					break
				}
			}
			dst = append(dst, src[i:j]...)
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// state is the file's content, in file order.
type state struct {
	order   []string
	entries map[string]*entry
}

func newState() *state { return &state{entries: map[string]*entry{}} }

// clone returns a copy of s that can be changed without touching s; the
// entries themselves are shared and must be replaced, not mutated.
func (s *state) clone() *state {
	return &state{order: slices.Clone(s.order), entries: maps.Clone(s.entries)}
}

func (s *state) put(phone string, e *entry) {
	if _, ok := s.entries[phone]; !ok {
		s.order = append(s.order, phone)
	}
	s.entries[phone] = e
}

func (s *state) remove(phone string) {
	if _, ok := s.entries[phone]; !ok {
		return
	}
	delete(s.entries, phone)
	s.order = slices.DeleteFunc(s.order, func(p string) bool { return p == phone })
}

// loadReport counts what parsing had to leave out.
type loadReport struct {
	droppedTurns  int // turns that were malformed or invalid for the API
	phones        int // conversations that lost turns
	badTimes      int // last_active values that could not be read
	systemEntries int // conversations stored for the system sender
}

// errNotObject marks a file whose top level is not a JSON object.
var errNotObject = errors.New("the file is not a JSON object")

// errEmpty marks a file with nothing in it. mombot never writes one (every
// save renames a whole file into place), so an empty file is damage, such
// as a full disk under another writer, and is handled like any other file
// that does not parse: an empty store is written as {}.
var errEmpty = errors.New("the file is empty")

// parse reads a conversations file. Empty input (or only white space) is
// errEmpty. Members that are not conversation objects are kept as they
// are; turns that are malformed or that the Messages API would reject are
// dropped and counted.
func parse(data []byte, loc *time.Location) (*state, loadReport, error) {
	var rep loadReport
	st := newState()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, rep, errEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, rep, errNotObject
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, rep, err
		}
		phone := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, rep, err
		}
		if phone == conversation.SystemSender {
			rep.systemEntries++
			continue
		}
		e, turns := parseEntry(raw, loc, &rep)
		if err := e.encode(turns, loc); err != nil {
			return nil, rep, err
		}
		st.put(phone, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, rep, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, rep, errors.New("data after the top-level object")
	}
	return st, rep, nil
}

// parseEntry reads one member of the file; its turns are returned apart,
// for encode, and are only kept in memory in the entry's encoding.
func parseEntry(raw json.RawMessage, loc *time.Location, rep *loadReport) (*entry, []conversation.Turn) {
	var obj map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return &entry{raw: compactCopy(raw)}, nil
	}
	e := &entry{}
	if t, ok := readLastActive(obj, loc); ok {
		e.lastActive = t
	} else {
		// Zero time: expired, so removed on first access.
		rep.badTimes++
		var keep json.RawMessage
		if v, present := obj["last_active"]; present {
			keep = compactCopy(v)
		}
		e.badTime = &keep
	}
	var rawTurns []json.RawMessage
	if v, ok := obj["turns"]; ok && json.Unmarshal(v, &rawTurns) != nil {
		rep.droppedTurns++
		rep.phones++
	}
	turns := make([]conversation.Turn, 0, len(rawTurns))
	dropped := 0
	for _, rt := range rawTurns {
		var t conversation.Turn
		if err := json.Unmarshal(rt, &t); err != nil {
			dropped++
			continue
		}
		turns = append(turns, t)
	}
	turns, invalid := conversation.Repair(turns)
	dropped += invalid
	if dropped > 0 {
		rep.droppedTurns += dropped
		rep.phones++
	}
	delete(obj, "last_active")
	delete(obj, "turns")
	if len(obj) > 0 {
		e.extra = make(map[string]json.RawMessage, len(obj))
		for k, v := range obj {
			e.extra[k] = compactCopy(v)
		}
	}
	return e, turns
}

// readLastActive returns the conversation object's last_active time, if it
// has one that can be read.
func readLastActive(obj map[string]json.RawMessage, loc *time.Location) (time.Time, bool) {
	var ts string
	if v, ok := obj["last_active"]; !ok || json.Unmarshal(v, &ts) != nil {
		return time.Time{}, false
	}
	t, err := parseTime(ts, loc)
	return t, err == nil
}

func compactCopy(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return bytes.Clone(raw)
	}
	return b.Bytes()
}

// encode sets e.enc, for a conversation of turns: the member's value
// indented as it sits in the file, two levels deep, the way Python's
// json.dump(indent=2) lays it out. turns must be valid; what is needed of
// them later is taken out of enc again.
func (e *entry) encode(turns []conversation.Turn, loc *time.Location) error {
	e.nturns, e.ids = len(turns), nil
	var c bytes.Buffer
	if e.raw != nil {
		c.Write(e.raw)
	} else {
		c.WriteByte('{')
		switch {
		case e.badTime == nil:
			c.WriteString(`"last_active":`)
			c.Write(quote(formatTime(e.lastActive, loc)))
			c.WriteByte(',')
		case *e.badTime != nil:
			c.WriteString(`"last_active":`)
			c.Write(*e.badTime)
			c.WriteByte(',')
		}
		c.WriteString(`"turns":`)
		e.turnsAt = c.Len()
		c.WriteByte('[')
		for i, t := range turns {
			if i > 0 {
				c.WriteByte(',')
			}
			b, err := t.MarshalJSON()
			if err != nil {
				return err
			}
			c.Write(b)
			if ids := t.ToolUseIDs(); ids != nil {
				if e.ids == nil {
					e.ids = make([][]string, len(turns))
				}
				e.ids[i] = ids
			}
		}
		c.WriteByte(']')
		e.turnsEnd = c.Len()
		for _, k := range slices.Sorted(maps.Keys(e.extra)) {
			c.WriteByte(',')
			c.Write(quote(k))
			c.WriteByte(':')
			c.Write(e.extra[k])
		}
		c.WriteByte('}')
	}
	var out bytes.Buffer
	if err := json.Indent(&out, c.Bytes(), "  ", "  "); err != nil {
		return fmt.Errorf("encode conversation: %w", err)
	}
	e.enc = bytes.Clone(out.Bytes()) // not the buffer's spare capacity, which can be as much again
	return nil
}

// render writes the whole file for st to w and returns its size. Entries
// are written from their cached encodings, so the cost of a save is the
// copy, not the encoding, of the conversations it did not change.
func render(st *state, w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	var n int64
	put := func(b []byte) {
		m, _ := bw.Write(b) // the error sticks in bw and is returned by Flush
		n += int64(m)
	}
	if len(st.order) == 0 {
		put([]byte("{}\n"))
		return n, bw.Flush()
	}
	put([]byte("{\n"))
	for i, p := range st.order {
		if i > 0 {
			put([]byte(",\n"))
		}
		put([]byte("  "))
		put(quote(p))
		put([]byte(": "))
		put(st.entries[p].enc)
	}
	put([]byte("\n}\n"))
	return n, bw.Flush()
}

func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
