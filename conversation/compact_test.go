package conversation

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendCompact: appendCompact accepts what json.Compact accepts and
// writes the same bytes, so that what is stored and sent to Claude does not
// depend on which of the two compacted it.
func FuzzAppendCompact(f *testing.F) {
	for _, seed := range []string{
		`{"type":"text","text":"a  b"}`, ` [ {"a" : 1 , "a" : [ true , null , -0.5e+10 ] } ] `, `"\u00e9\ud800\n"`,
		"\"\xff\xfe\"", `{"<&>":"\u2028"}`, `1 2`, `{`, `[1,]`, `"\x"`, "\"a\tb\"", `{"a":1}` + "\n", ``, `   `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want bytes.Buffer
		wantErr := json.Compact(&want, data)
		got, err := appendCompact(nil, data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("appendCompact(%q): error %v, json.Compact's %v", data, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendCompact(%q) = %q, json.Compact writes %q", data, got, want.Bytes())
		}
	})
}
