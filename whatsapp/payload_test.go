package whatsapp

import (
	"os"
	"path/filepath"
	"regexp"
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
		{file: "unsupported.json", kind: kindUnsupported},
		{file: "statuses.json", statuses: 4},
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
		{"audio", msg(`"type":"audio","audio":{"id":"1","mime_type":"audio/ogg; codecs=opus"}`), kindUnsupported, ""},
		{"video", msg(`"type":"video","video":{"id":"1"}`), kindUnsupported, ""},
		{"document", msg(`"type":"document","document":{"id":"1","filename":"a.pdf"}`), kindUnsupported, ""},
		{"sticker", msg(`"type":"sticker","sticker":{"id":"1","mime_type":"image/webp"}`), kindUnsupported, ""},
		{"location", msg(`"type":"location","location":{"latitude":1.5,"longitude":2}`), kindUnsupported, ""},
		{"contacts", msg(`"type":"contacts","contacts":[{"name":{"formatted_name":"A"}}]`), kindUnsupported, ""},
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
	for _, body := range []string{``, `{`, `[]`, `"x"`, `{"entry":5}`, `{"entry":[{"changes":[{"value":{"messages":[{"timestamp":"soon"}]}}]}]}`} {
		if _, err := parseDelivery([]byte(body)); err == nil {
			t.Errorf("parseDelivery(%q) succeeded", body)
		}
	}
}

func TestNormalizePhone(t *testing.T) {
	tests := map[string]string{
		"16505551234":       "+16505551234",
		"+1 (650) 555-1234": "+16505551234",
		"+44.20.7946.0000":  "+442079460000",
		"":                  "",
		"+":                 "",
		"1+2":               "",
		"12a":               "",
		"١٢٣":               "", // Arabic-Indic digits are not wa_id digits
	}
	for in, want := range tests {
		if got := NormalizePhone(in); got != want {
			t.Errorf("NormalizePhone(%q) = %q, want %q", in, got, want)
		}
	}
}

var phoneRE = regexp.MustCompile(`^\+[0-9]{1,32}$`)

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
		`{"entry":[{"changes":[{"field":"messages","value":{"contacts":[{"wa_id":"1"},{"wa_id":"2"}],"messages":[{"from":"2","id":"a","type":"interactive","interactive":{"type":"list_reply","list_reply":null}}]}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseDelivery(body)
		if err != nil {
			if len(d.Events) != 0 {
				t.Fatal("messages returned with an error")
			}
			return
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
			case kindImage:
				if ev.MediaID == "" {
					t.Errorf("photo without a media id")
				}
			case kindUnsupported, kindIgnored:
			default:
				t.Errorf("unknown kind %v", ev.Kind)
			}
		}
	})
}
