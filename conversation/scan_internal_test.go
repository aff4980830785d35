package conversation

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestBlockKeysMatchBlockFields: scanBlockFields reads the members that
// blockFields names, no more and no fewer. A field added to blockFields
// must be added to blockKeys and to scanBlockFields's switch too.
func TestBlockKeysMatchBlockFields(t *testing.T) {
	typ := reflect.TypeFor[blockFields]()
	var names []string
	for i := range typ.NumField() {
		names = append(names, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	if !slices.Equal(names, blockKeys[:]) {
		t.Fatalf("blockFields reads %q, blockKeys names %q: update blockKeys and scanBlockFields", names, blockKeys)
	}
}

var blockSeeds = []string{
	`{"type":"text","text":"hi"}`,
	`{"type":"text","text":"a \"q\" \\ b","citations":[{"x":"}"}]}`,
	`{"type":"tool_use","id":"toolu_1","name":"search","input":{"q":"a","n":[1,2]}}`,
	`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"r"}],"is_error":true}`,
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}}`,
	`{"type":"search_result","source":"https://x","title":"t"}`,
	`{"type":null}`, `{}`, `{"text":"no type"}`, `{"type":3}`, `{"Type":"text","TEXT":"x"}`,
	`{"type":"text","text":5}`, `{"type":"tool_use","id":7,"name":"n","input":{}}`,
	`{"type":"te\u0078t","text":"x"}`, `{"ty\u0070e":"text","text":"x"}`,
	`{ "type" : "text", "text" : "spaced" }`, `{"type":"a","type":"b"}`,
	`{"type":"tool_result","tool_use_id":"t","is_error":"yes"}`,
	`[1]`, `"s"`, `null`,
}

// FuzzParseValidBlock: on valid JSON, parseValidBlock gives what ParseBlock
// gives, and splitArray what json.Unmarshal into []json.RawMessage gives.
func FuzzParseValidBlock(f *testing.F) {
	for _, s := range blockSeeds {
		f.Add([]byte(s))
		f.Add([]byte("[" + s + "," + s + "]"))
	}
	f.Add([]byte(`[ 1 , "a" ,{"b":[]} ,null ]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		want, werr := ParseBlock(data)
		got, gerr := parseValidBlock(data)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%s: ParseBlock err %v, parseValidBlock err %v", data, werr, gerr)
		}
		if werr == nil && !sameBlock(got, want) {
			t.Fatalf("%s:\nparseValidBlock %+v\nParseBlock      %+v", data, got, want)
		}
		if len(data) > 0 && data[0] == '[' {
			var raws []json.RawMessage
			uerr := json.Unmarshal(data, &raws)
			split, ok := splitArray(data)
			if uerr != nil || !ok {
				if (uerr == nil) != ok {
					t.Fatalf("%s: Unmarshal err %v, splitArray ok %v", data, uerr, ok)
				}
				return
			}
			if len(split) != len(raws) {
				t.Fatalf("%s: splitArray %d elements, Unmarshal %d", data, len(split), len(raws))
			}
			for i := range raws {
				if !bytes.Equal(split[i], raws[i]) {
					t.Fatalf("%s: element %d = %s, want %s", data, i, split[i], raws[i])
				}
			}
		}
	})
}

// sameBlock compares two Blocks; a raw member absent and one that is null
// mean the same to every reader of a Block.
func sameBlock(a, b Block) bool {
	raw := func(x, y json.RawMessage) bool {
		norm := func(r json.RawMessage) string {
			if string(r) == "null" {
				return ""
			}
			return string(r)
		}
		return norm(x) == norm(y)
	}
	return a.Type == b.Type && a.ID == b.ID && a.Name == b.Name && a.ToolUseID == b.ToolUseID &&
		a.Text == b.Text && a.HasText == b.HasText && a.IsError == b.IsError &&
		raw(a.Input, b.Input) && raw(a.Content, b.Content) && bytes.Equal(a.Raw, b.Raw) &&
		reflect.DeepEqual(a.Source, b.Source)
}

// TestQuote: quote's fast path for plain text writes what encoding/json
// writes without HTML escaping.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "user", "assistant", "a b~", `a"b`, `a\b`, "a\nb", "<&>", "é", "\u2028", "\x7f", "\xff"} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got, want := string(quote(s)), strings.TrimSuffix(b.String(), "\n"); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzNeedsCompact: needsCompact, which jumps over strings, agrees with a
// byte-by-byte reading on any input, JSON or not.
func FuzzNeedsCompact(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"a":"b c"}`, `"a\" b"`, `"a\\" , 1`, `"unterminated  `, `"a\\\" "`, ``, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := false
		inString, escaped := false, false
		for _, c := range raw {
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			case !inString && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
				want = true
			}
			if want {
				break
			}
		}
		if got := needsCompact(raw); got != want {
			t.Fatalf("needsCompact(%q) = %v, want %v", raw, got, want)
		}
	})
}
