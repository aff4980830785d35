package whatsapp

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseDeliverySamples(t *testing.T) {
	const from, wamidPrefix = "+16505551234", "wamid."
	tests := []struct {
		file     string
		kind     kind
		text     string
		media    string
		statuses int
	}{
		{file: "text.json", kind: kindText, text: "Does it come in another color?"},
		{file: "image.json", kind: kindImage, text: "What plant is this?", media: "1003383421387256"},
		{file: "interactive_button_reply.json", kind: kindText, text: "Change"},
		{file: "interactive_list_reply.json", kind: kindText, text: "Priority Mail Express"},
		{file: "button.json", kind: kindText, text: "No"},
		{file: "unsupported.json", kind: kindIgnored}, // an edit notice
		{file: "unsupported_type.json", kind: kindUnsupported},
		{file: "audio_voice.json", kind: kindAudio, media: "1282843452909218"},
		{file: "audio_file.json", kind: kindAudio, media: "1282843452909219"},
		{file: "document.json", kind: kindDocument, text: "When is the bake sale?", media: "1003383421387260"},
		{file: "video.json", kind: kindVideo, text: "Look at her first steps!"},
		{file: "location.json", kind: kindLocation},
		{file: "contacts.json", kind: kindContacts},
		{file: "sticker.json", kind: kindIgnored},
		{file: "reply_context.json", kind: kindText, text: "Yes, that one"},
		{file: "statuses.json", statuses: 4},
		{file: "status_failed.json", statuses: 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := parseDelivery(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if d.Object != "whatsapp_business_account" {
				t.Errorf("object = %q", d.Object)
			}
			if d.Statuses != tt.statuses {
				t.Errorf("statuses = %d, want %d", d.Statuses, tt.statuses)
			}
			if d.Malformed != 0 {
				t.Errorf("%d elements of a documented sample counted as malformed", d.Malformed)
			}
			if tt.statuses > 0 {
				if len(d.Events) != 0 {
					t.Errorf("a status notification gave %d messages", len(d.Events))
				}
				return
			}
			if len(d.Events) != 1 {
				t.Fatalf("got %d messages, want 1", len(d.Events))
			}
			ev := d.Events[0]
			if ev.From != from || ev.WaID != "16505551234" || ev.ProfileName != "Sheena Nelson" {
				t.Errorf("from, wa_id, name = %q, %q, %q", ev.From, ev.WaID, ev.ProfileName)
			}
			if !strings.HasPrefix(ev.ID, wamidPrefix) || ev.PhoneNumberID != "106540352242922" {
				t.Errorf("id, phone number id = %q, %q", ev.ID, ev.PhoneNumberID)
			}
			if ev.Time.Before(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("time = %v", ev.Time)
			}
			if ev.Kind != tt.kind || ev.Text != tt.text || ev.MediaID != tt.media {
				t.Errorf("kind, text, media = %v, %q, %q; want %v, %q, %q", ev.Kind, ev.Text, ev.MediaID, tt.kind, tt.text, tt.media)
			}
		})
	}
}

func TestParseDeliveryKinds(t *testing.T) {
	msg := func(fields string) string {
		return `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"messages":[{"from":"15551230000","id":"wamid.X","timestamp":1749416383,` + fields + `}]}}]}]}`
	}
	tests := []struct {
		name string
		body string
		kind kind
		text string
	}{
		{"numeric timestamp", msg(`"type":"text","text":{"body":"hi"}`), kindText, "hi"},
		{"empty text", msg(`"type":"text","text":{"body":"  "}`), kindUnsupported, ""},
		{"text without text", msg(`"type":"text"`), kindUnsupported, ""},
		{"image without id", msg(`"type":"image","image":{"caption":"c"}`), kindUnsupported, ""},
		{"flow reply", msg(`"type":"interactive","interactive":{"type":"nfm_reply","nfm_reply":{}}`), kindUnsupported, ""},
		{"audio", msg(`"type":"audio","audio":{"id":"1","mime_type":"audio/ogg; codecs=opus"}`), kindAudio, ""},
		{"audio without id", msg(`"type":"audio","audio":{"mime_type":"audio/ogg"}`), kindUnsupported, ""},
		{"video", msg(`"type":"video","video":{"id":"1","caption":"steps"}`), kindVideo, "steps"},
		{"video without caption", msg(`"type":"video","video":{"id":"1"}`), kindVideo, ""},
		{"video without video", msg(`"type":"video"`), kindUnsupported, ""},
		{"document", msg(`"type":"document","document":{"id":"1","filename":"a.pdf","caption":"read"}`), kindDocument, "read"},
		{"document without id", msg(`"type":"document","document":{"filename":"a.pdf"}`), kindUnsupported, ""},
		{"sticker", msg(`"type":"sticker","sticker":{"id":"1","mime_type":"image/webp"}`), kindIgnored, ""},
		{"location", msg(`"type":"location","location":{"latitude":1.5,"longitude":2}`), kindLocation, ""},
		{"location without location", msg(`"type":"location"`), kindUnsupported, ""},
		{"contacts", msg(`"type":"contacts","contacts":[{"name":{"formatted_name":"A"}}]`), kindContacts, ""},
		{"no contacts", msg(`"type":"contacts","contacts":[]`), kindUnsupported, ""},
		{"an edit", msg(`"type":"unsupported","unsupported":{"type":"edit"}`), kindIgnored, ""},
		{"another unsupported", msg(`"type":"unsupported","unsupported":{"type":"poll"}`), kindUnsupported, ""},
		{"unsupported, no subtype", msg(`"type":"unsupported"`), kindUnsupported, ""},
		{"unknown", msg(`"type":"unknown"`), kindUnsupported, ""},
		{"reaction", msg(`"type":"reaction","reaction":{"message_id":"wamid.Y","emoji":"👍"}`), kindIgnored, ""},
		{"system", msg(`"type":"system","system":{"body":"changed number"}`), kindIgnored, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseDelivery([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Events) != 1 {
				t.Fatalf("got %d messages", len(d.Events))
			}
			if got := d.Events[0]; got.Kind != tt.kind || got.Text != tt.text {
				t.Errorf("kind, text = %v, %q; want %v, %q", got.Kind, got.Text, tt.kind, tt.text)
			}
		})
	}
}

func TestParseDeliveryMalformed(t *testing.T) {
	for _, body := range []string{
		``, `{`, `[]`, `"x"`, `{"entry":5}`, `{"entry":[5]}`, `{"entry":[{"changes":{}}]}`,
		`{"entry":[{"changes":[{"value":[]}]}]}`,
		`{"entry":[{"changes":[{"value":{"messages":{}}}]}]}`,
		`{"entry":[{"changes":[{"value":{"statuses":"sent"}}]}]}`,
		`{"entry":[{"changes":[{"value":{"metadata":7}}]}]}`,
	} {
		if _, err := parseDelivery([]byte(body)); !errors.Is(err, errMalformed) {
			t.Errorf("parseDelivery(%q) = %v, want errMalformed", body, err)
		}
	}
}

// One bad message must not cost the good ones their answer: a 400 would
// make Meta redeliver the whole payload, to the same answer, for a week.
func TestParseDeliverySkipsBadElements(t *testing.T) {
	good := func(id, body string) string {
		return `{"from":"16505551234","id":"` + id + `","timestamp":"1749416383","type":"text","text":{"body":"` + body + `"}}`
	}
	tests := []struct {
		name      string
		messages  string
		statuses  string
		want      []string // the ids of the messages returned
		malformed int
	}{
		{"bad timestamp", good("wamid.A", "one") + `,{"from":"16505551234","id":"wamid.B","timestamp":"soon","type":"text"}`, ``, []string{"wamid.A"}, 1},
		{"not an object", `5,` + good("wamid.A", "one") + `,"text",null,[]`, ``, []string{"wamid.A"}, 4},
		{"wrong field types", `{"id":7,"from":"1","type":"text"},{"id":"wamid.B","text":"hi"},` + good("wamid.C", "three"), ``, []string{"wamid.C"}, 2},
		{"bad ones between good ones", good("wamid.A", "one") + `,{"timestamp":-5},` + good("wamid.C", "three"), ``, []string{"wamid.A", "wamid.C"}, 1},
		{"bad status", good("wamid.A", "one"), `{"id":"wamid.S","status":"failed","errors":"none"},{"id":"wamid.T","status":"read","timestamp":"1749416390","recipient_id":"16505551234"}`, []string{"wamid.A"}, 1},
		{"bad contact", good("wamid.A", "one"), ``, []string{"wamid.A"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			contacts := `[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}]`
			if tt.name == "bad contact" {
				contacts = `[7,{"profile":"x"},{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}]`
			}
			body := `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"contacts":` + contacts + `,"messages":[` + tt.messages + `],"statuses":[` + tt.statuses + `]}}]}]}`
			d, err := parseDelivery([]byte(body))
			if err != nil {
				t.Fatalf("parseDelivery: %v", err)
			}
			var ids []string
			for _, ev := range d.Events {
				ids = append(ids, ev.ID)
				if ev.Kind != kindText || ev.From != "+16505551234" || ev.ProfileName != "Sheena Nelson" {
					t.Errorf("message %s: kind %v, from %q, name %q", ev.ID, ev.Kind, ev.From, ev.ProfileName)
				}
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("messages %q, want %q", ids, tt.want)
			}
			if d.Malformed != tt.malformed {
				t.Errorf("malformed = %d, want %d", d.Malformed, tt.malformed)
			}
		})
	}
}

func TestParseDeliveryFailedStatuses(t *testing.T) {
	d, err := parseDelivery(readTestdata(t, "status_failed.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []SendFailure{{
		RecipientID: "16505551234",
		MessageID:   "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI4QjJGNTVGMDQ5QTE1QTc2MDkA",
		Time:        time.Unix(1750263773, 0).UTC(),
		Code:        131047,
		Title:       "Re-engagement message",
		Details:     "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
	}}
	if !slices.Equal(d.Failed, want) {
		t.Errorf("failed = %+v\nwant %+v", d.Failed, want)
	}
	if len(d.Events) != 0 {
		t.Errorf("a status update gave %d messages", len(d.Events))
	}

	// Among sent, delivered and read updates only the failure counts.
	d, err = parseDelivery(readTestdata(t, "statuses.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Failed) != 1 || d.Failed[0].Code != 131047 || d.Failed[0].RecipientID != "16505551234" {
		t.Errorf("failed = %+v, want the one 131047", d.Failed)
	}

	// A failure without errors[] is still one; the title falls back to
	// the message.
	d, err = parseDelivery([]byte(`{"entry":[{"changes":[{"value":{"statuses":[` +
		`{"id":"wamid.A","status":"failed","recipient_id":"15550001111"},` +
		`{"id":"wamid.B","status":"failed","recipient_id":"15550001111","errors":[{"code":131026,"message":"Message undeliverable"}]}]}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Failed) != 2 || d.Failed[0].Code != 0 || d.Failed[0].MessageID != "wamid.A" ||
		d.Failed[1].Code != 131026 || d.Failed[1].Title != "Message undeliverable" {
		t.Errorf("failed = %+v", d.Failed)
	}
}

func TestSendFailureLogValueMasksTheRecipient(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Warn("not delivered", "failure", SendFailure{RecipientID: "16505551234", MessageID: "wamid.A", Code: 131047, Title: "Re-engagement message"})
	out := buf.String()
	if strings.Contains(out, "6505551234") || !strings.Contains(out, "1234") {
		t.Errorf("recipient not masked: %s", out)
	}
	for _, want := range []string{"failure.code=131047", "failure.id=wamid.A", `failure.title="Re-engagement message"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s: %s", want, out)
		}
	}
}

var phoneRE = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)

// FuzzParseDelivery feeds arbitrary bytes to the webhook parser, seeded
// with the documented sample payloads in testdata. Whatever the input, the
// parser does not panic, and every message it returns is well formed:
// a sender that is "" or "+digits", a kind it knows, text for text
// messages and a media id for photos.
func FuzzParseDelivery(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"entry":null}`, `{"entry":[{"changes":[{"value":{}}]}]}`,
		`{"entry":[{"changes":[{"value":{"messages":[{"timestamp":"-1"}]}}]}]}`,
		`{"entry":[{"changes":[{"value":{"messages":[5,null,{"id":"a","from":"1","type":"text","text":{"body":"x"}}],"statuses":[{"status":"failed","errors":[{}]},7]}}]}]}`,
		`{"entry":[{"changes":[{"field":"messages","value":{"contacts":[{"wa_id":"1"},{"wa_id":"2"}],"messages":[{"from":"2","id":"a","type":"interactive","interactive":{"type":"list_reply","list_reply":null}}]}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseDelivery(body)
		if err != nil {
			if len(d.Events) != 0 || len(d.Failed) != 0 {
				t.Fatal("messages returned with an error")
			}
			return
		}
		if len(d.Failed) > d.Statuses || d.Malformed < 0 {
			t.Errorf("%d failures and %d malformed of %d statuses", len(d.Failed), d.Malformed, d.Statuses)
		}
		for _, ev := range d.Events {
			if ev.From != "" && !phoneRE.MatchString(ev.From) {
				t.Errorf("sender %q is not a normalised phone number", ev.From)
			}
			switch ev.Kind {
			case kindText:
				if strings.TrimSpace(ev.Text) == "" {
					t.Errorf("text message without text")
				}
			case kindImage, kindAudio, kindDocument:
				if ev.MediaID == "" {
					t.Errorf("%s without a media id", ev.Type)
				}
			case kindLocation:
				if ev.Location == nil {
					t.Errorf("location without a location")
				}
			case kindContacts:
				if len(ev.Contacts) == 0 {
					t.Errorf("contacts without a contact")
				}
			case kindVideo, kindUnsupported, kindIgnored:
			default:
				t.Errorf("unknown kind %v", ev.Kind)
			}
		}
	})
}

// TestParseMetaSamples reads Meta's documented payload for each kind of
// message (testdata/*.json, after
// https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples)
// into what the server acts on.
func TestParseMetaSamples(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, ev event)
	}{
		{"audio_voice.json", func(t *testing.T, ev event) {
			if ev.Kind != kindAudio || !ev.Voice || ev.MediaID != "1282843452909218" || ev.MediaType != "audio/ogg; codecs=opus" {
				t.Errorf("%+v", ev)
			}
		}},
		{"audio_file.json", func(t *testing.T, ev event) {
			if ev.Kind != kindAudio || ev.Voice || ev.MediaType != "audio/mpeg" {
				t.Errorf("%+v", ev)
			}
		}},
		{"document.json", func(t *testing.T, ev event) {
			if ev.Kind != kindDocument || ev.Filename != "newsletter.pdf" || ev.Text != "When is the bake sale?" || ev.MediaType != "application/pdf" || ev.MediaID != "1003383421387260" {
				t.Errorf("%+v", ev)
			}
		}},
		{"video.json", func(t *testing.T, ev event) {
			if ev.Kind != kindVideo || ev.Text != "Look at her first steps!" || ev.MediaID != "" {
				t.Errorf("%+v (a video is never downloaded)", ev)
			}
		}},
		{"location.json", func(t *testing.T, ev event) {
			want := Location{Latitude: 37.483307, Longitude: -122.148981, Name: "Philz Coffee", Address: "101 Forest Ave, Palo Alto, CA 94301", URL: "https://www.philzcoffee.com/"}
			if ev.Kind != kindLocation || ev.Location == nil || *ev.Location != want {
				t.Errorf("%+v", ev)
			}
		}},
		{"contacts.json", func(t *testing.T, ev event) {
			want := Contact{Name: "Barbara J. Johnson", Organization: "Maple Street School, Grade 3, Teacher",
				Phones: []string{"+1 (940) 555-1234 (HOME)", "+1 (650) 555-1234 (WORK)"}, Emails: []string{"bjohnson@example.com (WORK)"}}
			if ev.Kind != kindContacts || len(ev.Contacts) != 1 || !reflect.DeepEqual(ev.Contacts[0], want) {
				t.Errorf("%+v", ev.Contacts)
			}
			if ev.ProfileName != "Sheena Nelson" {
				t.Errorf("the card's contacts were taken for the sender's: profile %q", ev.ProfileName)
			}
		}},
		{"sticker.json", func(t *testing.T, ev event) {
			if ev.Kind != kindIgnored {
				t.Errorf("%+v", ev)
			}
		}},
		{"unsupported.json", func(t *testing.T, ev event) {
			if ev.Kind != kindIgnored || ev.Subtype != "edit" {
				t.Errorf("an edit notice: %+v", ev)
			}
		}},
		{"unsupported_type.json", func(t *testing.T, ev event) {
			if ev.Kind != kindUnsupported {
				t.Errorf("%+v", ev)
			}
		}},
		{"reply_context.json", func(t *testing.T, ev event) {
			if ev.Kind != kindText || ev.Text != "Yes, that one" || ev.ReplyTo != "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA" {
				t.Errorf("%+v", ev)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			d, err := parseDelivery(data)
			if err != nil || len(d.Events) != 1 || d.Malformed != 0 {
				t.Fatalf("parseDelivery: %d events, %d malformed, %v", len(d.Events), d.Malformed, err)
			}
			tt.check(t, d.Events[0])
		})
	}
}

// A message dated well after it was received (a phone's clock set wrong)
// is taken as sent when received; a few seconds of skew are kept.
func TestFutureTimestamp(t *testing.T) {
	received := time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC)
	tests := []struct {
		sent, want time.Time
	}{
		{received.AddDate(1, 0, 0), received},
		{received.Add(FutureSlack + time.Second), received},
		{received.Add(30 * time.Second), received.Add(30 * time.Second)},
		{received.Add(-time.Hour), received.Add(-time.Hour)},
		{time.Time{}, received},
	}
	for _, tt := range tests {
		if got := (event{Time: tt.sent, Received: received}).sentAt(); !got.Equal(tt.want) {
			t.Errorf("sent %s: sentAt = %s, want %s", tt.sent, got, tt.want)
		}
	}
}
