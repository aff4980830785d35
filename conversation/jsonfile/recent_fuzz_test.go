package jsonfile

import (
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// FuzzParseRecent checks the parser of the recent messages file, which
// anyone with access to the folder may edit: it never panics, and what it
// accepts is what RememberMessages could have written (valid phones and
// messages, clipped texts), renders, and parses back the same.
func FuzzParseRecent(f *testing.F) {
	for _, s := range []string{
		`{"recent": {"+14155551234": [{"id":"wamid.1","role":"assistant","text":"Here are 3 recipes","at":"2026-02-24T18:35:00.123456Z"}]}}`,
		`{"recent": {}, "note": [1, 2, {"x": null}]}`,
		`{"recent": {"+14155551234": []}}`,
		`{"recent": {"+14155551234": [{"id":"","role":"user","text":"x","at":"2026-02-24T18:35:00Z"}]}}`,
		`{"recent": {"": [{"id":"a","role":"user","text":"x","at":"2026-02-24T18:35:00Z"}]}}`,
		`{"recent": {"+1": [{"id":"a","role":"tool","text":"x","at":"yesterday"}]}}`,
		`{"recent": null}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseRecent(data)
		if err != nil {
			return
		}
		for phone, msgs := range file.phones {
			if err := conversation.CheckPhone(phone); err != nil {
				t.Fatalf("accepted phone %q: %v", phone, err)
			}
			for _, m := range msgs {
				if err := conversation.CheckRecent(m); err != nil || len(m.Text) > conversation.MaxRecentText {
					t.Fatalf("accepted message %+v: %v", m, err)
				}
			}
		}
		out, err := file.render()
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		again, err := parseRecent(out)
		if err != nil {
			t.Fatalf("the rendered file does not parse: %v\n%s", err, out)
		}
		for phone, msgs := range file.phones {
			got := again.phones[phone]
			if len(got) != len(msgs) {
				t.Fatalf("%s: %d messages, then %d", phone, len(msgs), len(got))
			}
			for i := range msgs {
				a, b := msgs[i], got[i]
				if a.ID != b.ID || a.Role != b.Role || a.Text != b.Text || !a.At.Truncate(time.Microsecond).Equal(b.At) {
					t.Fatalf("%s message %d: %+v, then %+v", phone, i, a, b)
				}
			}
		}
	})
}
