package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ImagePlaceholder is the text that replaces a base64 image in a stored
// message (research R4 of the original design). The image was seen by the
// model in its own turn; what it said about it is stored, the bytes are not.
const ImagePlaceholder = "[Image sent: photo]"

// DocumentPlaceholder returns the text that stands for a document in a
// stored message, "[Document sent: NAME]": the assistant names the file
// ("[Document sent: newsletter.pdf]"), and sanitize, replacing a base64
// document it finds in a turn, names its media type ("[Document sent:
// application/pdf]").
func DocumentPlaceholder(name string) string {
	if name == "" {
		name = "document"
	}
	return "[Document sent: " + name + "]"
}

// sanitize returns m ready for storage: its content compacted, and every
// base64 image or document block, including those inside tool results,
// replaced by a text block with [ImagePlaceholder] or [DocumentPlaceholder].
// Images and documents given by URL or file id are kept. The message's extra
// keys are compacted too, so that what is read back is what was saved, and
// "role" and "content" are dropped from them; it fails if a value is not
// valid JSON. Everything else is kept byte for byte.
func sanitize(m Message) (Message, error) {
	content, err := appendCompact(nil, m.Content)
	if err != nil {
		return Message{}, errors.New("content is not valid JSON")
	}
	// Only image and document blocks are replaced: content that names
	// neither type needs no parse of its blocks here (ValidateTurn parses
	// them anyway).
	if len(content) > 0 && content[0] == '[' &&
		(bytes.Contains(content, []byte(`"image"`)) || bytes.Contains(content, []byte(`"document"`))) {
		out, _, err := sanitizeBlocks(content)
		if err != nil {
			return Message{}, err
		}
		content = out
	}
	extra, err := cleanExtra(m.Extra, "role", "content")
	if err != nil {
		return Message{}, err
	}
	return Message{Role: m.Role, Content: content, Extra: extra}, nil
}

// cleanExtra returns a copy of extra without the keys in skip and with every
// value compacted, or nil if none is left. It fails if a value is not valid
// JSON. Memory.Save applies it to a turn's extra keys (skipping
// "messages") and, through sanitize, to each message's.
func cleanExtra(extra map[string]json.RawMessage, skip ...string) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	for k, v := range extra {
		if slices.Contains(skip, k) {
			continue
		}
		v = compact(v)
		if !json.Valid(v) {
			return nil, fmt.Errorf("extra %q is not valid JSON", k)
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(extra))
		}
		out[k] = v
	}
	return out, nil
}

// sanitizeBlocks rewrites an array of blocks, reporting whether it changed.
func sanitizeBlocks(content json.RawMessage) (json.RawMessage, bool, error) {
	raws, err := rawBlocks(content)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for i, raw := range raws {
		out, ch, err := sanitizeBlock(raw)
		if err != nil {
			return nil, false, fmt.Errorf("block %d: %w", i, err)
		}
		if ch {
			raws[i], changed = out, true
		}
	}
	if !changed {
		return content, false, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range raws {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteByte(']')
	return b.Bytes(), true, nil
}

func sanitizeBlock(raw json.RawMessage) (json.RawMessage, bool, error) {
	blk, err := ParseBlock(raw) // raw is one of rawBlocks's
	if err != nil {
		return nil, false, err
	}
	switch blk.Type {
	case "image":
		if blk.Source != nil && blk.Source.Type == "base64" {
			return TextBlock(ImagePlaceholder), true, nil
		}
	case "document":
		if blk.Source != nil && blk.Source.Type == "base64" {
			return TextBlock(DocumentPlaceholder(blk.Source.MediaType)), true, nil
		}
	case "tool_result":
		if len(blk.Content) > 0 && blk.Content[0] == '[' {
			inner, changed, err := sanitizeBlocks(blk.Content)
			if err != nil || !changed {
				return nil, false, err
			}
			out, err := replaceField(raw, "content", inner)
			return out, err == nil, err
		}
	}
	return nil, false, nil
}

// replaceField returns the JSON object obj with the value of key replaced,
// keeping the order and bytes of every other member.
func replaceField(obj json.RawMessage, key string, val json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		b.Write(quote(k))
		b.WriteByte(':')
		if k == key {
			v = val
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
