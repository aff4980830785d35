package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	phonepkg "github.com/mombot/mombot/phone"
)

// decodeConversation reads a stored conversation of phone. Turns that do not
// parse, or that the API would refuse (repair), are left out and counted in
// dropped; an unreadable last_active leaves LastActive zero. Only data that
// is not a JSON object is an error.
//
// It reads the record with one json.Decoder, token by token down to each
// message's members, so that a message's content is read once, rather than
// once more for each object and array around it, as decoding each level
// with json.Unmarshal would. The result is what that would give: a turn,
// a message or a "messages" of the wrong JSON type leaves its turn out, the
// last of two equal keys counts, and every other key is kept in Extra.
func decodeConversation(phone string, rec Record, loc *time.Location) (c Conversation, dropped int, err error) {
	d := json.NewDecoder(bytes.NewReader(rec.Data))
	var (
		lastActive json.RawMessage // nil: no last_active
		turns      []Turn
		extra      map[string]json.RawMessage
	)
	first, err := members(d, func(key string) error {
		switch key {
		case "last_active":
			return d.Decode(&lastActive)
		case "turns":
			var err error
			turns, dropped, err = decodeTurns(d)
			return err
		default:
			return decodeExtra(d, &extra, key)
		}
	})
	isObject := first == json.Delim('{')
	if err == nil && isObject {
		_, err = d.Token()
		if err == io.EOF { // nothing after the object
			err = nil
		} else {
			err = errors.New("data after the object")
		}
	}
	if err != nil || !isObject {
		return Conversation{}, 0, fmt.Errorf("conversation of %s is not a JSON object", phonepkg.Mask(phone))
	}
	c = Conversation{Phone: phone, Version: rec.Version, Extra: compactExtra(extra)}
	if lastActive != nil {
		var s string
		if json.Unmarshal(lastActive, &s) == nil {
			c.LastActive, _ = parseTime(s, loc)
		}
		if c.LastActive.IsZero() {
			c.rawTime = compact(lastActive)
		}
	}
	kept, invalid := repairTurns(turns, true) // decodeMessage compacted them
	c.Turns = append([]Turn{}, kept...)
	return c, dropped + invalid, nil
}

// decodeTurns reads the value of "turns": the turns of an array, and how
// many of its values are not turns (1 if the value is not an array, other
// than null).
func decodeTurns(d *json.Decoder) (turns []Turn, dropped int, err error) {
	first, err := elements(d, func() error {
		var t Turn
		first, err := members(d, func(key string) error {
			if key != "messages" {
				return decodeExtra(d, &t.Extra, key)
			}
			var ok bool
			t.Messages, ok, err = decodeMessages(d)
			if !ok {
				t.Messages = nil
			}
			return err
		})
		if err != nil {
			return err
		}
		if first != json.Delim('{') || t.Messages == nil {
			dropped++
			return nil
		}
		t.Extra = compactExtra(t.Extra)
		turns = append(turns, t)
		return nil
	})
	switch {
	case err != nil:
		return nil, 0, err
	case first == nil: // null: no turns
		return nil, 0, nil
	case first != json.Delim('['):
		return nil, 1, nil
	}
	return turns, dropped, nil
}

// decodeMessages reads the value of "messages", reporting whether it is an
// array of messages that each have a string "role" and a "content".
func decodeMessages(d *json.Decoder) (msgs []Message, ok bool, err error) {
	ok = true
	first, err := elements(d, func() error {
		m, good, err := decodeMessage(d)
		ok = ok && good
		msgs = append(msgs, m)
		return err
	})
	if err != nil || first != json.Delim('[') {
		return nil, false, err
	}
	if msgs == nil {
		msgs = []Message{}
	}
	return msgs, ok, nil
}

// decodeMessage reads a message object as [Message.UnmarshalJSON] does,
// reporting whether it is one.
func decodeMessage(d *json.Decoder) (m Message, ok bool, err error) {
	var role, content json.RawMessage
	first, err := members(d, func(key string) error {
		switch key {
		case "role":
			return d.Decode(&role)
		case "content":
			return d.Decode(&content)
		default:
			return decodeExtra(d, &m.Extra, key)
		}
	})
	if err != nil || first != json.Delim('{') || role == nil || string(role) == "null" || content == nil ||
		json.Unmarshal(role, &m.Role) != nil {
		return Message{}, false, err
	}
	m.Content = compact(content)
	m.Extra = compactExtra(m.Extra)
	return m, true, nil
}

// decodeExtra reads the value of key into (*extra)[key].
func decodeExtra(d *json.Decoder, extra *map[string]json.RawMessage, key string) error {
	var v json.RawMessage
	if err := d.Decode(&v); err != nil {
		return err
	}
	if *extra == nil {
		*extra = make(map[string]json.RawMessage)
	}
	(*extra)[key] = v
	return nil
}

// members reads the next value of d and returns its first token: for an
// object, json.Delim('{'), having called member with each key, which must
// read the key's value; any other value is read past.
func members(d *json.Decoder, member func(key string) error) (first json.Token, err error) {
	if first, err = d.Token(); err != nil {
		return nil, err
	}
	if first != json.Delim('{') {
		return first, skip(d, first)
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil, err
		}
		if err := member(key.(string)); err != nil {
			return nil, err
		}
	}
	_, err = d.Token() // }
	return first, err
}

// elements reads the next value of d and returns its first token: for an
// array, json.Delim('['), having called element for each value, which must
// read it; any other value is read past.
func elements(d *json.Decoder, element func() error) (first json.Token, err error) {
	if first, err = d.Token(); err != nil {
		return nil, err
	}
	if first != json.Delim('[') {
		return first, skip(d, first)
	}
	for d.More() {
		if err := element(); err != nil {
			return nil, err
		}
	}
	_, err = d.Token() // ]
	return first, err
}

// skip reads the rest of the value whose first token was tok.
func skip(d *json.Decoder, tok json.Token) error {
	for depth := 0; ; {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = d.Token(); err != nil {
			return err
		}
	}
}
