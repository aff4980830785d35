package conversation

import (
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	phonepkg "github.com/mombot/mombot/phone"
)

// storedConversation is the stored form of a conversation as
// encoding/json/v2 decodes it, its turns as T: []storedTurn, or
// jsontext.Value to read them one at a time.
type storedConversation[T any] struct {
	LastActive jsontext.Value            `json:"last_active"`
	Turns      T                         `json:"turns"`
	Extra      map[string]jsontext.Value `json:",embed"`
}

type storedTurn struct {
	Messages []storedMessage           `json:"messages"`
	Extra    map[string]jsontext.Value `json:",embed"`
}

type storedMessage struct {
	Role    *string                   `json:"role"` // nil: none, or null
	Content jsontext.Value            `json:"content"`
	Extra   map[string]jsontext.Value `json:",embed"`
}

// decodeConversation reads a stored conversation of phone. Turns that do not
// parse, or that the API would refuse (repair), are left out and counted in
// dropped; an unreadable last_active leaves LastActive zero. Only data that
// is not a JSON object is an error.
//
// A turn, a message or a "messages" of the wrong JSON type leaves its turn
// out, a message needs a string "role" and a "content", the last of two
// equal keys counts, keys are matched by their exact names, and every
// other key is kept in Extra. Content and extra values are kept compact.
//
// It compacts the record and decodes it with encoding/json/v2, which
// checks the JSON as it decodes rather than in a pass of its own; only a
// record with a turn of the wrong shape is decoded again, a turn at a time.
func decodeConversation(phone string, rec Record, loc *time.Location) (c Conversation, dropped int, err error) {
	data, err := appendCompact(nil, rec.Data)
	if err != nil || jsontext.Value(data).Kind() != '{' {
		return Conversation{}, 0, fmt.Errorf("conversation of %s is not a JSON object", phonepkg.Mask(phone))
	}
	var turns []Turn
	var sc storedConversation[[]storedTurn]
	if jsonv2.Unmarshal(data, &sc, decodeOptions) == nil {
		for _, st := range sc.Turns {
			if t, ok := st.turn(); ok {
				turns = append(turns, t)
			} else {
				dropped++
			}
		}
	} else {
		var loose storedConversation[jsontext.Value]
		if err := jsonv2.Unmarshal(data, &loose, decodeOptions); err != nil {
			return Conversation{}, 0, fmt.Errorf("conversation of %s is not a JSON object", phonepkg.Mask(phone))
		}
		sc.LastActive, sc.Extra = loose.LastActive, loose.Extra
		turns, dropped = decodeTurns(loose.Turns)
	}
	c = Conversation{Phone: phone, Version: rec.Version, Extra: rawExtra(sc.Extra)}
	if sc.LastActive != nil {
		var s string
		if jsonv2.Unmarshal(sc.LastActive, &s, decodeOptions) == nil {
			c.LastActive, _ = parseTime(s, loc)
		}
		if c.LastActive.IsZero() {
			c.rawTime = []byte(sc.LastActive)
		}
	}
	kept, invalid := repairTurns(turns, true)
	c.Turns = append([]Turn{}, kept...)
	return c, dropped + invalid, nil
}

// decodeTurns reads raw, the value of "turns", a turn at a time: the turns
// of an array, and how many of its values are not turns (1 if raw is not
// an array, other than null).
func decodeTurns(raw jsontext.Value) (turns []Turn, dropped int) {
	var raws []jsontext.Value
	switch raw.Kind() {
	case 'n', 0: // null, or no "turns"
		return nil, 0
	case '[':
		if jsonv2.Unmarshal(raw, &raws, decodeOptions) != nil {
			return nil, 1
		}
	default:
		return nil, 1
	}
	for _, r := range raws {
		var st storedTurn
		if jsonv2.Unmarshal(r, &st, decodeOptions) != nil {
			dropped++
			continue
		}
		t, ok := st.turn()
		if !ok {
			dropped++
			continue
		}
		turns = append(turns, t)
	}
	return turns, dropped
}

// turn returns st as a Turn, reporting whether it is one: it has
// "messages", and each of them a role and a content.
func (st storedTurn) turn() (Turn, bool) {
	if st.Messages == nil {
		return Turn{}, false
	}
	t := Turn{Messages: make([]Message, len(st.Messages)), Extra: rawExtra(st.Extra)}
	for i, sm := range st.Messages {
		if sm.Role == nil || sm.Content == nil {
			return Turn{}, false
		}
		t.Messages[i] = Message{Role: *sm.Role, Content: []byte(sm.Content), Extra: rawExtra(sm.Extra)}
	}
	return t, true
}

// rawExtra returns extra as Extra holds it, nil if it is empty.
func rawExtra(extra map[string]jsontext.Value) map[string]json.RawMessage {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(extra))
	for k, v := range extra {
		out[k] = json.RawMessage(v)
	}
	return out
}
