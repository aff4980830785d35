package jsonfile

import (
	"reflect"
	"testing"
)

// FuzzParseUsage: the ledger file's parser, on anything a hand edit or
// another program may leave, either refuses it or reads a ledger that
// writes back to a file read as the same ledger.
func FuzzParseUsage(f *testing.F) {
	for _, seed := range []string{
		`{"usage": {}}`,
		`{}`,
		`{"usage": {"+14155551234": {"2026-02-24": {"messages": 1, "api_calls": 2, "input_tokens": 3, "cache_write_5m_tokens": 4, "cache_write_1h_tokens": 5, "cache_read_tokens": 6, "output_tokens": 7}}}}`,
		`{"version": 2, "notes": ["a", {"b": null}], "usage": {"+1": {"2026-02-23": {"messages": 4}}}}`,
		`{"usage": {"+1": {"yesterday": {}}}}`,
		`{"usage": {"+1": {"2026-02-23": {"messages": -1}}}}`,
		`{"usage": null}`,
		`{"usage": {"\u2028<&>": {"2026-02-23": {}}}}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := parseUsage(data)
		if err != nil {
			return
		}
		out, err := u.render()
		if err != nil {
			t.Fatalf("render of a parsed ledger: %v", err)
		}
		again, err := parseUsage(out)
		if err != nil {
			t.Fatalf("the written ledger does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again.usage, u.usage) || len(again.other) != len(u.other) {
			t.Fatalf("the ledger changed on the way through the file:\n%+v\n%+v\n%s", u, again, out)
		}
	})
}
