package jsonfile

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCompactJSON: on valid JSON, compactJSON gives what json.Compact
// gives, also after json.Indent, as the store's cached encodings are.
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":"c d"}],"e":"\"q\" \\ \\\\\" x","f":null}`,
		`[ "a\\", " b " , {"c" : [ ] } ]`,
		`"plain"`, `12`, `{}`, `[]`, `"\u00e9 \ud83c\udf2e 🌮"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, data); err != nil {
			t.Fatal(err)
		}
		if got := compactJSON(nil, data); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactJSON(%q) = %q, want %q", data, got, want.Bytes())
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, want.Bytes(), "  ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := compactJSON(nil, indented.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactJSON of the indented %q = %q, want %q", data, got, want.Bytes())
		}
	})
}
