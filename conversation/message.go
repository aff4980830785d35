package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Roles of a Messages API message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one Messages API message. Content is the message's "content"
// value exactly as JSON: a string or an array of content blocks. Blocks are
// never decoded into typed structs and re-encoded, so fields and block types
// this package does not know are kept unchanged.
//
// A Messages API message has no other fields (the API rejects them), but a
// conversations file may hold some, written by another program or by hand.
// They are kept in Extra and stored with the message, and left out of what
// is sent: see [Message.MarshalJSON].
type Message struct {
	Role    string
	Content json.RawMessage
	// Extra holds the message object's keys other than "role" and
	// "content", as raw JSON. They are stored and read back unchanged
	// (by [Turn.MarshalJSON] and [Turn.UnmarshalJSON]) but never sent.
	Extra map[string]json.RawMessage
}

// UserText returns a user message whose content is the plain string text.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: quote(text)}
}

// NewMessage returns a message of role whose content is the given blocks,
// each a JSON object such as one made by [TextBlock].
func NewMessage(role string, blocks ...json.RawMessage) Message {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, blk := range blocks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(compact(blk))
	}
	b.WriteByte(']')
	return Message{Role: role, Content: b.Bytes()}
}

// TextBlock returns a {"type":"text"} content block.
func TextBlock(text string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"text","text":`)
	b.Write(quote(text))
	b.WriteByte('}')
	return b.Bytes()
}

// MarshalJSON writes the message as the Messages API takes it,
// {"role":...,"content":...}, with the content bytes as they are, so a
// message is always encoded to the same bytes. Extra is left out: this is
// the form to put in a request. (Stores write Extra too, through
// [Turn.MarshalJSON].) Note that json.Marshal escapes <, > and & in what
// MarshalJSON returns; to send the stored bytes unchanged, call MarshalJSON
// or use an Encoder with SetEscapeHTML(false).
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := m.encode(&b, false, false); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode writes m's JSON object to b, with its extra keys in sorted order
// after role and content if stored is set. With compacted set, the content
// is known to be compact and valid, and is written as it is.
func (m Message) encode(b *bytes.Buffer, stored, compacted bool) error {
	b.Grow(len(m.Content) + len(m.Role) + 24)
	b.WriteString(`{"role":`)
	switch m.Role {
	case RoleUser, RoleAssistant: // no escapes: skip quote's encoder
		b.WriteByte('"')
		b.WriteString(m.Role)
		b.WriteByte('"')
	default:
		b.Write(quote(m.Role))
	}
	b.WriteString(`,"content":`)
	if compacted {
		b.Write(m.Content)
	} else if err := json.Compact(b, m.Content); err != nil {
		return fmt.Errorf("conversation: message content is not valid JSON")
	}
	if stored {
		if err := encodeExtra(b, m.Extra, "role", "content"); err != nil {
			return fmt.Errorf("conversation: message %w", err)
		}
	}
	b.WriteByte('}')
	return nil
}

// encodeExtra writes ,"key":value for each key of extra but skip, in sorted
// order.
func encodeExtra(b *bytes.Buffer, extra map[string]json.RawMessage, skip ...string) error {
	if len(extra) == 0 {
		return nil // most turns and messages: no sorting, no allocation
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if slices.Contains(skip, k) {
			continue
		}
		v := extra[k]
		if !json.Valid(v) {
			return errors.New("extra " + k + " is not valid JSON")
		}
		b.WriteByte(',')
		b.Write(quote(k))
		b.WriteByte(':')
		b.Write(compact(v))
	}
	return nil
}

// UnmarshalJSON reads a message object, keeping its content compacted but
// otherwise byte for byte, and its other keys in Extra.
func (m *Message) UnmarshalJSON(data []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	rawRole, ok := obj["role"]
	if !ok || string(rawRole) == "null" {
		return errors.New(`conversation: message has no "role"`)
	}
	var role string
	if err := json.Unmarshal(rawRole, &role); err != nil {
		return fmt.Errorf(`conversation: message "role": %w`, err)
	}
	content, ok := obj["content"]
	if !ok {
		return errors.New(`conversation: message has no "content"`)
	}
	delete(obj, "role")
	delete(obj, "content")
	m.Role = role
	m.Content = compact(content)
	m.Extra = compactExtra(obj)
	return nil
}

// compactExtra returns obj's values compacted, or nil if it is empty.
func compactExtra(obj map[string]json.RawMessage) map[string]json.RawMessage {
	if len(obj) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		out[k] = compact(v)
	}
	return out
}

// cloneExtra returns a deep copy of extra.
func cloneExtra(extra map[string]json.RawMessage) map[string]json.RawMessage {
	if extra == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(extra))
	for k, v := range extra {
		out[k] = bytes.Clone(v)
	}
	return out
}

// Clone returns a copy of m that shares no memory with it.
func (m Message) Clone() Message {
	return Message{Role: m.Role, Content: bytes.Clone(m.Content), Extra: cloneExtra(m.Extra)}
}

// Equal reports whether m and o are the same role, the same content bytes
// and the same extra keys with the same bytes.
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && bytes.Equal(m.Content, o.Content) &&
		maps.EqualFunc(m.Extra, o.Extra, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
}

// Block is the part of a content block that the memory rules look at. Raw is
// the whole block, unchanged.
type Block struct {
	Type      string
	ID        string // tool_use: the call's id
	Name      string // tool_use: the tool's name
	ToolUseID string // tool_result: the id of the call it answers
	Text      string // text: the text
	HasText   bool   // text: whether a "text" string was present
	Input     json.RawMessage
	Content   json.RawMessage // tool_result: its content, a string or blocks
	IsError   bool            // tool_result: is_error
	Source    *Source         // image, document
	Raw       json.RawMessage
}

// Source is the "source" of an image or document block.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	URL       string `json:"url"`
}

// blockFields holds the members of a block that some block type gives a
// meaning, matched by their exact names, as the API matches them. They are
// kept raw and decoded only for the types that define them: other types
// use the same names for other shapes (a search_result's "source" is a
// string URL, an image's is an object).
type blockFields struct {
	Type      *string        `json:"type"`
	ID        jsontext.Value `json:"id"`
	Name      jsontext.Value `json:"name"`
	ToolUseID jsontext.Value `json:"tool_use_id"`
	Text      jsontext.Value `json:"text"`
	Input     jsontext.Value `json:"input"`
	Content   jsontext.Value `json:"content"`
	IsError   jsontext.Value `json:"is_error"`
	Source    jsontext.Value `json:"source"`
}

// ParseBlock decodes the fields of one content block that the memory rules
// need. It fails when raw is not a JSON object with a string "type", or
// when a field the rules read has the wrong JSON type for the block's type
// (a text block's "text", a tool_use's "id" and "name", a tool_result's
// "tool_use_id" and "is_error", an image's or document's "source"). Members
// of other block types are not decoded, whatever their shape. Members are
// matched by their exact names; of two equal names, the last counts.
func ParseBlock(raw json.RawMessage) (Block, error) {
	var f blockFields
	if jsonv2.Unmarshal(raw, &f, decodeOptions) != nil {
		return Block{}, errors.New(`content block is not a JSON object with a string "type"`)
	}
	return blockFrom(f, raw)
}

// blockFrom is ParseBlock after the block's members are read into f.
// Each member the rules read is decoded whatever the block's type, and a
// mismatch is an error only for the block types that define the member, in
// the order id, name, tool_use_id, text, is_error. (It decodes without
// closures or interfaces, so that the block stays off the heap.)
func blockFrom(f blockFields, raw json.RawMessage) (Block, error) {
	if f.Type == nil {
		return Block{}, errors.New(`content block has no "type"`)
	}
	b := Block{Type: *f.Type, Input: json.RawMessage(f.Input), Content: json.RawMessage(f.Content), Raw: raw}
	var errID, errName, errToolUseID, errText, errIsError error
	b.ID, errID = stringField(f.ID)
	b.Name, errName = stringField(f.Name)
	b.ToolUseID, errToolUseID = stringField(f.ToolUseID)
	b.Text, errText = stringField(f.Text)
	// A "text" that is not null counts as present even when it is not a
	// string, as json.Unmarshal into a *string leaves it.
	b.HasText = len(f.Text) > 0 && string(f.Text) != "null"
	b.IsError, errIsError = boolField(f.IsError)
	for _, fe := range [...]struct {
		name, blockType string
		err             error
	}{
		{"id", "tool_use", errID},
		{"name", "tool_use", errName},
		{"tool_use_id", "tool_result", errToolUseID},
		{"text", "text", errText},
		{"is_error", "tool_result", errIsError},
	} {
		if fe.err != nil && b.Type == fe.blockType {
			return Block{}, fmt.Errorf("%s %q: %w", b.Type, fe.name, fe.err)
		}
	}
	if (b.Type == "image" || b.Type == "document") && len(f.Source) > 0 && string(f.Source) != "null" {
		src := new(Source)
		if jsonv2.Unmarshal(f.Source, src, decodeOptions) != nil {
			return Block{}, fmt.Errorf(`%s "source": not an object whose type, media_type and url are strings`, b.Type)
		}
		b.Source = src
	}
	return b, nil
}

// stringField decodes val, a member of a block, into a string: "" for a
// missing or null member, and "" with an error for one that is not a
// string.
func stringField(val jsontext.Value) (string, error) {
	var s string
	if len(val) > 0 && jsonv2.Unmarshal(val, &s, decodeOptions) != nil {
		return "", errors.New("not a string")
	}
	return s, nil
}

// boolField is stringField for a bool.
func boolField(val jsontext.Value) (bool, error) {
	var v bool
	if len(val) > 0 && jsonv2.Unmarshal(val, &v, decodeOptions) != nil {
		return false, errors.New("not true or false")
	}
	return v, nil
}

// IsString reports whether the content is a plain JSON string.
func (m Message) IsString() bool {
	return len(m.Content) > 0 && m.Content[0] == '"'
}

// Blocks returns the content blocks of m. A string content is returned as a
// single text block.
func (m Message) Blocks() ([]Block, error) {
	if m.IsString() {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s, HasText: true, Raw: TextBlock(s)}}, nil
	}
	raws, err := rawBlocks(m.Content)
	if err != nil {
		return nil, err
	}
	out := make([]Block, len(raws))
	for i, r := range raws {
		if out[i], err = ParseBlock(r); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	return out, nil
}

// checkedBlocks returns what Blocks returns, but for each block's Raw, with
// one decode of the content rather than one for the array and one per
// block. Validation, which reads the blocks' fields only, uses it.
func (m Message) checkedBlocks() ([]Block, error) {
	if m.IsString() {
		s, err := stringField(jsontext.Value(m.Content))
		if err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s, HasText: true}}, nil
	}
	if len(m.Content) == 0 || m.Content[0] != '[' {
		return m.Blocks()
	}
	var fields []blockFields
	if err := jsonv2.Unmarshal(m.Content, &fields, decodeOptions); err != nil {
		return m.Blocks() // for its error, which names the block
	}
	out := make([]Block, len(fields))
	for i, f := range fields {
		var err error
		if out[i], err = blockFrom(f, nil); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	return out, nil
}

// Text returns the text of m's text blocks, joined by newlines.
func (m Message) Text() string {
	blocks, err := m.Blocks()
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	for _, blk := range blocks {
		if blk.Type == "text" && blk.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

func rawBlocks(content json.RawMessage) ([]json.RawMessage, error) {
	if len(content) == 0 || content[0] != '[' {
		return nil, errors.New("content is neither a string nor an array of blocks")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, err
	}
	return raws, nil
}

// quote returns s as a JSON string, without HTML escaping, so that stored
// text reads as it was written.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// compact returns a copy of raw without insignificant white space. Strings
// and their escapes are left exactly as they are. Invalid JSON is returned
// unchanged; validation reports it.
func compact(raw []byte) []byte {
	out, _ := appendCompact(nil, raw) // on error, out is a copy of raw
	return out
}

// appendCompact appends src to dst without insignificant white space, as
// json.Compact does, in one pass that also checks that src is one JSON
// value; strings, with their escapes and any invalid UTF-8, and numbers
// are kept byte for byte, as are equal keys. On error it appends src as
// it is.
func appendCompact(dst, src []byte) ([]byte, error) {
	return jsontext.AppendFormat(dst, src, compactOptions...)
}

// compactOptions are appendCompact's: jsontext.Value.Compact's.
var compactOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true),
}

// decodeOptions are those of every decode of a message's JSON with
// encoding/json/v2: the last of two equal keys counts, as with
// encoding/json, and strings may hold invalid UTF-8, which validation
// rejects on its own, so that it does not fail the decode of what holds
// them.
var decodeOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
