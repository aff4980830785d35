package delivery_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mombot/mombot/delivery"
)

// FuzzMessageJSON reads arbitrary bytes as a stored message (an inbox file
// or a Redis list may hold anything someone wrote there): no panic, and a
// message read is one with an id and a key whose encoding reads back the
// same.
func FuzzMessageJSON(f *testing.F) {
	for _, seed := range []string{
		`{"id":"wamid.A","key":"+14155551234","body":{"text":"hi"}}`,
		`{"ID":"wamid.old","From":"+14155551234","Text":"hi"}`,
		`{"id":"x","key":"+1","body":null}`,
		`{"no":"id"}`, `[]`, `"s"`, `{"id":1}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m delivery.Message
		if err := m.UnmarshalJSON(data); err != nil {
			return
		}
		if m.ID == "" || m.Key == "" {
			t.Fatalf("read a message without an id or a key from %q", data)
		}
		enc, err := m.MarshalJSON()
		if err != nil {
			if json.Valid(m.Body) {
				t.Fatalf("cannot encode a message read from %q: %v", data, err)
			}
			return
		}
		var back delivery.Message
		if err := back.UnmarshalJSON(enc); err != nil {
			t.Fatalf("cannot read back %s: %v", enc, err)
		}
		var want bytes.Buffer
		json.Compact(&want, m.Body)
		if back.ID != m.ID || back.Key != m.Key || !bytes.Equal(back.Body, want.Bytes()) {
			t.Fatalf("read back %+v, want %+v", back, m)
		}
	})
}
