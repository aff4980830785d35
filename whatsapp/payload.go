package whatsapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mombot/mombot/phone"
)

// The webhook payload, as documented for the Cloud API's "messages" field:
//
//	{"object": "whatsapp_business_account",
//	 "entry": [{"id": WABA_ID, "changes": [{"field": "messages", "value": {
//	   "messaging_product": "whatsapp",
//	   "metadata": {"display_phone_number": ..., "phone_number_id": ...},
//	   "contacts": [{"profile": {"name": ...}, "wa_id": ...}],
//	   "messages": [{"from": ..., "id": "wamid...", "timestamp": "...", "type": ..., ...}],
//	   "statuses": [...]}}]}]}
//
// Only the fields this package uses are decoded; everything else is ignored.
type notification struct {
	Object string  `json:"object"`
	Entry  []entry `json:"entry"`
}

type entry struct {
	ID      string   `json:"id"`
	Changes []change `json:"changes"`
}

type change struct {
	Field string      `json:"field"`
	Value changeValue `json:"value"`
}

type changeValue struct {
	Metadata struct {
		PhoneNumberID string `json:"phone_number_id"`
	} `json:"metadata"`
	// The arrays are decoded element by element, so that one element of
	// an unexpected shape costs only itself: rejecting the whole delivery
	// would leave its good messages unanswered while Meta redelivers it,
	// to the same answer, for a week.
	Contacts []json.RawMessage `json:"contacts"`
	Messages []json.RawMessage `json:"messages"`
	Statuses []json.RawMessage `json:"statuses"`
}

type contact struct {
	Profile struct {
		Name string `json:"name"`
	} `json:"profile"`
	WaID string `json:"wa_id"`
}

// wireStatus is an element of statuses[]: what became of a message the
// server sent. Only a failure matters here, for the log: WhatsApp reports
// most send failures (such as a reply outside the 24-hour window) only
// this way, after the send itself was accepted.
type wireStatus struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"`
	Timestamp   unixTime    `json:"timestamp"`
	RecipientID string      `json:"recipient_id"`
	Errors      []wireError `json:"errors"`
}

type wireError struct {
	Code      int    `json:"code"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

type wireMessage struct {
	From      string   `json:"from"`
	ID        string   `json:"id"`
	Timestamp unixTime `json:"timestamp"`
	Type      string   `json:"type"`
	Text      *struct {
		Body string `json:"body"`
	} `json:"text"`
	Image *struct {
		ID       string `json:"id"`
		MimeType string `json:"mime_type"`
		Caption  string `json:"caption"`
	} `json:"image"`
	Interactive *struct {
		Type        string     `json:"type"`
		ButtonReply *replyItem `json:"button_reply"`
		ListReply   *replyItem `json:"list_reply"`
	} `json:"interactive"`
	Button *struct {
		Text    string `json:"text"`
		Payload string `json:"payload"`
	} `json:"button"`
	wireKinds // kinds.go
}

type replyItem struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// unixTime is a Unix time in seconds, which the payload writes as a string
// ("1603059201") but which some documented samples write as a number.
type unixTime struct{ time.Time }

func (t *unixTime) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		return nil
	}
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || sec < 0 || sec > 1<<40 {
		return fmt.Errorf("timestamp %.40q is not a Unix time", s)
	}
	t.Time = time.Unix(sec, 0).UTC()
	return nil
}

// kind is what the server does with a message.
type kind int

const (
	kindText        kind = iota // text for the assistant
	kindImage                   // a photo to download, with an optional caption
	kindUnsupported             // answered with what the assistant can read
	kindIgnored                 // not answered at all (reactions, system notices)
)

// event is one message of a delivery, flattened out of its entry and change.
type event struct {
	PhoneNumberID string // the business number it was sent to
	ID            string // wamid
	From          string // normalised "+<digits>"; empty when not a phone number
	WaID          string // the sender as sent, for the log when From is empty
	ProfileName   string
	Time          time.Time
	// Received is when the server queued it, which stands for Time when
	// the message has none.
	Received   time.Time
	Type       string // the payload's type, for logs
	Kind       kind
	Text       string
	MediaID    string
	MediaType  string
	eventKinds // kinds.go
}

// webhook is what one webhook request carries.
type webhook struct {
	Object   string
	Events   []event
	Statuses int // status updates, which are ignored but for failures
	Skipped  int // changes of fields other than "messages"
	// Malformed counts the elements of messages[] and statuses[] that
	// could not be decoded; they are skipped and the rest is handled.
	Malformed int
	// Failed lists the status updates that report a message of ours as
	// not delivered, in the order of the payload.
	Failed []SendFailure
}

// SendFailure is a status update reporting that a message the server sent
// was not delivered. WhatsApp accepts a send and reports many failures
// only later, this way: a reply outside the 24-hour customer service
// window (code 131047), to a number not on WhatsApp (131026), and so on.
//
// A SendFailure logs itself (it is a [slog.LogValuer]) with the recipient
// masked.
type SendFailure struct {
	// RecipientID is the WhatsApp id (the phone number's digits) the
	// message was sent to.
	RecipientID string
	// MessageID is the wamid of the message that failed.
	MessageID string
	// Time is when WhatsApp reported the failure; zero if it did not say.
	Time time.Time
	// Code and Title are the first error's code and title, such as 131047
	// "Re-engagement message"; Details is its error_data.details, the
	// explanation. Code is 0 when the update carried no error.
	Code    int
	Title   string
	Details string
}

// LogValue implements slog.LogValuer; the recipient is masked.
func (f SendFailure) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("to", phone.Mask(f.RecipientID)),
		slog.String("id", f.MessageID),
		slog.Int("code", f.Code),
		slog.String("title", f.Title),
		slog.String("details", f.Details),
	)
}

// errMalformed is returned by parseDelivery for a body that is not a
// webhook payload.
var errMalformed = errors.New("malformed webhook payload")

// parseDelivery decodes a webhook body. It never panics. A body that is
// not JSON, or whose envelope (entries, changes and their value, and the
// arrays in it) has the wrong shape, returns an error wrapping
// errMalformed. An element of messages[] or statuses[] of the wrong shape
// is only counted in Malformed and skipped.
func parseDelivery(body []byte) (webhook, error) {
	var n notification
	if err := json.Unmarshal(body, &n); err != nil {
		return webhook{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	d := webhook{Object: n.Object}
	for _, e := range n.Entry {
		for _, c := range e.Changes {
			if c.Field != "" && c.Field != "messages" {
				d.Skipped++
				continue
			}
			parseChange(&d, &c.Value)
		}
	}
	return d, nil
}

// parseChange adds the messages and failures of one change to d.
func parseChange(d *webhook, v *changeValue) {
	var contacts []contact
	for _, raw := range v.Contacts {
		var ct contact
		if json.Unmarshal(raw, &ct) == nil {
			contacts = append(contacts, ct)
		}
	}
	for _, raw := range v.Messages {
		var m wireMessage
		if err := json.Unmarshal(raw, &m); err != nil || isNull(raw) {
			d.Malformed++
			continue
		}
		ev := event{
			PhoneNumberID: v.Metadata.PhoneNumberID,
			ID:            m.ID,
			From:          normalize(m.From),
			WaID:          m.From,
			Time:          m.Timestamp.Time,
			Type:          m.Type,
		}
		for _, ct := range contacts {
			if normalize(ct.WaID) == ev.From || len(contacts) == 1 {
				ev.ProfileName = ct.Profile.Name
				break
			}
		}
		classify(&ev, &m)
		d.Events = append(d.Events, ev)
	}
	d.Statuses += len(v.Statuses)
	for _, raw := range v.Statuses {
		var st wireStatus
		if err := json.Unmarshal(raw, &st); err != nil || isNull(raw) {
			d.Malformed++
			continue
		}
		if st.Status != "failed" {
			continue
		}
		f := SendFailure{RecipientID: st.RecipientID, MessageID: st.ID, Time: st.Timestamp.Time}
		if len(st.Errors) > 0 {
			e := st.Errors[0]
			f.Code, f.Title, f.Details = e.Code, e.Title, e.ErrorData.Details
			if f.Title == "" {
				f.Title = e.Message
			}
		}
		d.Failed = append(d.Failed, f)
	}
}

// isNull reports whether raw is the JSON null, which decodes without error
// into anything but is no message.
func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// classify sets the event's kind and text from the message's type.
func classify(ev *event, m *wireMessage) {
	ev.Kind = kindUnsupported
	if classifyKinds(ev, m) {
		return
	}
	switch m.Type {
	case "text":
		if m.Text != nil && strings.TrimSpace(m.Text.Body) != "" {
			ev.Kind, ev.Text = kindText, m.Text.Body
		}
	case "image":
		if m.Image != nil && m.Image.ID != "" {
			ev.Kind, ev.Text = kindImage, m.Image.Caption
			ev.MediaID, ev.MediaType = m.Image.ID, m.Image.MimeType
		}
	case "interactive":
		if m.Interactive == nil {
			break
		}
		var r *replyItem
		switch m.Interactive.Type {
		case "button_reply":
			r = m.Interactive.ButtonReply
		case "list_reply":
			r = m.Interactive.ListReply
		}
		if r != nil && strings.TrimSpace(r.Title) != "" {
			ev.Kind, ev.Text = kindText, r.Title
		}
	case "button": // a quick-reply button of a template message
		if m.Button != nil && strings.TrimSpace(m.Button.Text) != "" {
			ev.Kind, ev.Text = kindText, m.Button.Text
		}
	case "reaction", "system", "request_welcome":
		// A reaction is an emoji on an earlier message and a system
		// message a notice such as a changed number: answering them with
		// "I can only read text and photos" would only be noise.
		ev.Kind = kindIgnored
	}
}

// sentAt returns when ev was sent, or else received; zero if neither is
// known (a message queued by an older version). A time more than
// FutureSlack after the receipt (a phone's clock set wrong) is replaced by
// the receipt.
func (ev event) sentAt() time.Time {
	if ev.Time.IsZero() || (!ev.Received.IsZero() && ev.Time.Sub(ev.Received) > FutureSlack) {
		return ev.Received
	}
	return ev.Time
}

// normalize returns a wa_id in E.164 form, or "" when it is not a phone
// number (the message is then ignored).
func normalize(waID string) string {
	n, _ := phone.Normalize(waID)
	return n
}
