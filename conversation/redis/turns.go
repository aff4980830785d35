package redis

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mombot/mombot/conversation"
)

// A turn is stored as one element of the conversation's list: the turn's
// JSON (conversation.Turn.MarshalJSON) with a first member that this
// version adds to the turns it validated as they were saved:
//
//	{"_mombot":"1 <CRC-32C of the turn's JSON, hex> <tool_use id, hex>...","messages":[...],...}
//
// The turn's JSON is the element with that member taken out. The member
// stays valid JSON, so an older version reads the element as a turn with
// one more extra key; its letters are hex digits and spaces only, so the
// append script reads the ids with a Lua pattern, without decoding the
// turn. An element whose checksum matches is split into messages without
// being decoded or validated again; any other (written by an older version
// or another program, or changed since) is decoded and validated.
const (
	headerOpen = `{"_mombot":"`
	headerKey  = "_mombot"
	headerV1   = "1"
)

// encodeTurn returns the element for turn, its entry in the ids list and its
// tool_use ids in hex. A turn that was not validated is stored without the
// header member.
//
// The ids list (<prefix>ids:<phone>) runs beside the turns list, one entry
// per turn: the checksum in the turn's header ("-" for a turn without one)
// and its tool ids, hex, separated by spaces. It lets the append script
// check a new turn's ids without moving the turns through Lua.
func encodeTurn(turn conversation.Turn, trusted bool) (elem []byte, entry string, hexIDs []string, err error) {
	data, err := turn.MarshalJSON()
	if err != nil {
		return nil, "", nil, err
	}
	ids := turn.ToolUseIDs()
	hexIDs = make([]string, len(ids))
	for i, id := range ids {
		hexIDs[i] = hex.EncodeToString([]byte(id))
	}
	sum := "-"
	if trusted {
		sum = strconv.FormatUint(uint64(conversation.Checksum(data)), 16)
	}
	entry = strings.Join(append([]string{sum}, hexIDs...), " ")
	if !trusted {
		return data, entry, hexIDs, nil
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(headerOpen) + len(entry) + 4)
	b.WriteString(headerOpen + headerV1 + " ")
	b.WriteString(entry)
	b.WriteString(`",`)
	b.Write(data[1:]) // after the '{'
	return b.Bytes(), entry, hexIDs, nil
}

// decodeTurn reads an element, which it may change. trusted reports
// whether it carried a matching checksum; an element without one is decoded
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
