package conversation

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var validSeeds = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e+3`,
	`""`, `"a\"b\\c\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`, `"\x"`, "\"a\tb\"", "\"\x7f\xff\"",
	`"unterminated`, `"ends in \"`, `[]`, `{}`, `[ ]`, `{ }`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" : [ 1 , { "b" : null } ] }`,
	`{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, "\n[1]\r\n\t", `[1]]`, `[1]x`, `}`, `]`,
	`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}],"is_error":true}`,
}

// FuzzValidJSON: validJSON says what json.Valid says, on every input; and
// on valid JSON, scanJSON's facts are needsCompact's and utf8.Valid's.
func FuzzValidJSON(f *testing.F) {
	for _, s := range append(validSeeds, blockSeeds...) {
		f.Add([]byte(s))
	}
	f.Add([]byte("[\"caf\xc3\xa9 \xed\xa0\x80\", \"\xf0\x9f\x8c\xae\"]"))
	f.Add([]byte("{\"a\":\"\xe2\x82\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
		facts := scanJSON(data)
		if !facts.valid {
			return
		}
		if want := needsCompact(data); facts.spaced != want {
			t.Fatalf("scanJSON(%q).spaced = %v, needsCompact says %v", data, facts.spaced, want)
		}
		if want := utf8.Valid(data); facts.validUTF8 != want {
			t.Fatalf("scanJSON(%q).validUTF8 = %v, utf8.Valid says %v", data, facts.validUTF8, want)
		}
	})
}

// TestValidJSONDepth: nesting is refused where encoding/json refuses it.
func TestValidJSONDepth(t *testing.T) {
	for _, n := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			data := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closer, n))
			if got, want := validJSON(data), json.Valid(data); got != want {
				t.Errorf("%d of %q: validJSON %v, json.Valid %v", n, open, got, want)
			}
		}
	}
}

func BenchmarkValidJSON(b *testing.B) {
	content := toolResultContent()
	b.Run("impl=validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			if !validJSON(content) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("impl=json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			if !json.Valid(content) {
				b.Fatal("invalid")
			}
		}
	})
}

// toolResultContent is a 2 kB tool_result content array, like the bulk of
// the benchmarks' turns.
func toolResultContent() []byte {
	var listing strings.Builder
	for r := range 16 {
		listing.WriteString("1. Lemon herb chicken thighs with spinach and feta (35 min, serves 4). Ingredients: chicken, \"lemon\".\n")
		_ = r
	}
	return NewMessage(RoleUser, []byte(`{"type":"tool_result","tool_use_id":"toolu_01","content":`+string(quote(listing.String()))+`}`)).Content
}

// FuzzFastField: where fastField decodes a value, json.Unmarshal decodes it
// to the same result.
func FuzzFastField(f *testing.F) {
	for _, s := range []string{`"a"`, `""`, `"a\"b"`, "\"\xff\"", `"é"`, `"a\nb\t\"c\\d\/e\bf\fg\rh"`, `"\\"`, `"x\\\""`, `true`, `false`, `null`, `1`, `{}`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, val []byte) {
		if !json.Valid(val) {
			return
		}
		var s1, s2 string
		if fastField(val, &s1) {
			if err := json.Unmarshal(val, &s2); err != nil || s1 != s2 {
				t.Fatalf("%q into *string: fastField %q, json.Unmarshal %q, %v", val, s1, s2, err)
			}
		}
		var p1, p2 *string
		if fastField(val, &p1) {
			if err := json.Unmarshal(val, &p2); err != nil || p1 == nil || p2 == nil || *p1 != *p2 {
				t.Fatalf("%q into **string: fastField %v, json.Unmarshal %v, %v", val, p1, p2, err)
			}
		}
		var b1, b2 bool
		if fastField(val, &b1) {
			if err := json.Unmarshal(val, &b2); err != nil || b1 != b2 {
				t.Fatalf("%q into *bool: fastField %v, json.Unmarshal %v, %v", val, b1, b2, err)
			}
		}
	})
}

// TestValidJSONStringBytes: every byte value at every place in a string
// long enough for the eight-byte steps, alone and escaped, gets
// json.Valid's answer.
func TestValidJSONStringBytes(t *testing.T) {
	for c := range 256 {
		for pos := range 24 {
			for _, esc := range []bool{false, true} {
				s := []byte(`"` + strings.Repeat("a", 24) + `"`)
				ins := []byte{byte(c)}
				if esc {
					ins = []byte{'\\', byte(c)}
				}
				data := append(append(append([]byte{}, s[:1+pos]...), ins...), s[1+pos:]...)
				if got, want := validJSON(data), json.Valid(data); got != want {
					t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
				}
			}
		}
	}
}
