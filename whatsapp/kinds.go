package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mombot/mombot/apology"
)

// The kinds of message besides text, photos and button replies, as the
// Cloud API's webhook documents them
// (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples,
// and the per-type pages under
// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/):
//
//	"audio":    {"id", "mime_type": "audio/ogg; codecs=opus", "sha256", "voice": true}  (voice: recorded in WhatsApp)
//	"document": {"id", "mime_type", "sha256", "filename", "caption"}
//	"video":    {"id", "mime_type", "sha256", "caption"}
//	"location": {"latitude", "longitude", "name", "address", "url"}
//	"contacts": [{"name": {"formatted_name", ...}, "org": {"company", "department", "title"},
//	              "phones": [{"phone", "type", "wa_id"}], "emails": [{"email", "type"}], ...}]
//	"sticker":  {"id", "mime_type": "image/webp", "sha256", "animated"}
//	"context":  {"from", "id"}  on any message that replies to an earlier one (swipe to reply);
//	            {"forwarded": true} on a forwarded message, {"frequently_forwarded": true}
//	            on one forwarded more than 5 times
//	"unsupported": {"type": "edit"} with type "unsupported": an edit of an earlier message

// Kinds of message this file adds to those of payload.go. Their values
// follow payload.go's, since queued events store them.
const (
	kindAudio    kind = kindIgnored + 1 + iota // a voice note or audio file to download and transcribe
	kindDocument                               // a file to download, with an optional caption
	kindVideo                                  // a video: only its caption is read
	kindLocation                               // a shared location
	kindContacts                               // shared contact cards
)

// FutureSlack is how far ahead of its receipt a message's timestamp may be
// before the receipt time stands for it: phones with a wrong clock date
// their messages in the future, and the model would read that date.
const FutureSlack = 5 * time.Minute

// Location is a location a person shared.
type Location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
	URL       string  `json:"url,omitempty"`
}

// Contact is a contact card a person shared, reduced to what the
// assistant reads.
type Contact struct {
	Name string `json:"name"`
	// Organization is the company, department and title, joined.
	Organization string `json:"organization,omitempty"`
	// Phones and Emails are each followed by their label, if any:
	// "+1 (940) 555-1234 (HOME)".
	Phones []string `json:"phones,omitempty"`
	Emails []string `json:"emails,omitempty"`
}

// wireKinds are the fields of a message for the kinds of this file.
type wireKinds struct {
	Context *struct {
		From                string `json:"from"`
		ID                  string `json:"id"`
		Forwarded           bool   `json:"forwarded"`
		FrequentlyForwarded bool   `json:"frequently_forwarded"`
	} `json:"context"`
	Audio *struct {
		ID       string `json:"id"`
		MimeType string `json:"mime_type"`
		Voice    bool   `json:"voice"`
	} `json:"audio"`
	Document *struct {
		ID       string `json:"id"`
		MimeType string `json:"mime_type"`
		Filename string `json:"filename"`
		Caption  string `json:"caption"`
	} `json:"document"`
	Video *struct {
		ID      string `json:"id"`
		Caption string `json:"caption"`
	} `json:"video"`
	Location    *Location     `json:"location"`
	Contacts    []wireContact `json:"contacts"`
	Unsupported *struct {
		Type string `json:"type"`
	} `json:"unsupported"`
}

type wireContact struct {
	Name struct {
		FormattedName string `json:"formatted_name"`
		FirstName     string `json:"first_name"`
		LastName      string `json:"last_name"`
	} `json:"name"`
	Org struct {
		Company    string `json:"company"`
		Department string `json:"department"`
		Title      string `json:"title"`
	} `json:"org"`
	Phones []struct {
		Phone string `json:"phone"`
		Type  string `json:"type"`
	} `json:"phones"`
	Emails []struct {
		Email string `json:"email"`
		Type  string `json:"type"`
	} `json:"emails"`
}

// eventKinds are the fields of an event for the kinds of this file. They
// are stored with the queued event.
type eventKinds struct {
	// ReplyTo is the id of the message this one replies to, if any.
	ReplyTo string `json:",omitempty"`
	// Forwarded marks a forwarded message, ForwardedMany one forwarded
	// more than 5 times.
	Forwarded     bool `json:",omitempty"`
	ForwardedMany bool `json:",omitempty"`
	// Voice marks audio recorded in WhatsApp (a voice note), not a file.
	Voice bool `json:",omitempty"`
	// Filename is a document's name as sent.
	Filename string    `json:",omitempty"`
	Location *Location `json:",omitempty"`
	Contacts []Contact `json:",omitempty"`
	Subtype  string    `json:",omitempty"` // unsupported.type, for the log
}

// classifyKinds sets the kind of the messages of this file, and the id of
// the message replied to, on any message. It reports whether it decided
// the kind.
func classifyKinds(ev *event, m *wireMessage) bool {
	if m.Context != nil {
		ev.ReplyTo = strings.TrimSpace(m.Context.ID)
		ev.ForwardedMany = m.Context.FrequentlyForwarded
		ev.Forwarded = m.Context.Forwarded || ev.ForwardedMany
	}
	switch m.Type {
	case "audio":
		if m.Audio == nil || m.Audio.ID == "" {
			return false
		}
		ev.Kind, ev.MediaID, ev.MediaType, ev.Voice = kindAudio, m.Audio.ID, m.Audio.MimeType, m.Audio.Voice
	case "document":
		if m.Document == nil || m.Document.ID == "" {
			return false
		}
		ev.Kind, ev.MediaID, ev.MediaType = kindDocument, m.Document.ID, m.Document.MimeType
		ev.Filename, ev.Text = m.Document.Filename, m.Document.Caption
	case "video":
		if m.Video == nil {
			return false
		}
		// The video is never downloaded: the model cannot watch it.
		ev.Kind, ev.Text = kindVideo, m.Video.Caption
	case "location":
		if m.Location == nil {
			return false
		}
		loc := *m.Location
		ev.Kind, ev.Location = kindLocation, &loc
	case "contacts":
		for _, c := range m.Contacts {
			ev.Contacts = append(ev.Contacts, c.contact())
		}
		if len(ev.Contacts) == 0 {
			return false
		}
		ev.Kind = kindContacts
	case "sticker":
		// A sticker is a reaction in picture form: answering "I can only
		// read ..." would be noise.
		ev.Kind = kindIgnored
	case "unsupported":
		if m.Unsupported == nil {
			return false
		}
		ev.Subtype = m.Unsupported.Type
		if m.Unsupported.Type != "edit" {
			return false
		}
		// An edit of an earlier message: the original was answered.
		ev.Kind = kindIgnored
	default:
		return false
	}
	return true
}

func (c wireContact) contact() Contact {
	name := c.Name.FormattedName
	if strings.TrimSpace(name) == "" {
		name = strings.TrimSpace(c.Name.FirstName + " " + c.Name.LastName)
	}
	out := Contact{Name: name, Organization: joinNonEmpty(", ", c.Org.Company, c.Org.Department, c.Org.Title)}
	for _, p := range c.Phones {
		if s := labelled(p.Phone, p.Type); s != "" {
			out.Phones = append(out.Phones, s)
		}
	}
	for _, e := range c.Emails {
		if s := labelled(e.Email, e.Type); s != "" {
			out.Emails = append(out.Emails, s)
		}
	}
	return out
}

func labelled(value, label string) string {
	value, label = strings.TrimSpace(value), strings.TrimSpace(label)
	switch {
	case value == "":
		return ""
	case label == "":
		return value
	}
	return value + " (" + label + ")"
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

// media names, for the log and the person, what each kind downloads.
var mediaNames = map[kind]string{kindImage: "photo", kindAudio: "voice note", kindDocument: "document"}

// fillKinds completes in with what ev's kind carries, downloading its
// media. When that fails, it returns an error whose apology.Message is the
// reply to send instead.
func (c *Client) fillKinds(ctx context.Context, log *slog.Logger, ev event, in *Inbound) error {
	in.ReplyTo, in.Location, in.Contacts, in.Video = ev.ReplyTo, ev.Location, ev.Contacts, ev.Kind == kindVideo
	in.Forwarded, in.ForwardedMany = ev.Forwarded, ev.ForwardedMany
	what, ok := mediaNames[ev.Kind]
	if !ok {
		return nil
	}
	data, mediaType, err := c.graph.media(ctx, ev.MediaID)
	if err != nil {
		log.Error("whatsapp: "+what+" download failed", "err", err)
		if errors.Is(err, errMediaTooLarge) {
			switch ev.Kind {
			case kindImage:
				return fmt.Errorf("whatsapp: %s: %w", what, apology.ErrImageTooLarge)
			case kindDocument:
				return fmt.Errorf("whatsapp: %s: %w", what, apology.ErrDocumentTooLarge)
			}
		}
		return &apology.MediaError{What: what, Err: err}
	}
	if ev.MediaType != "" {
		mediaType = ev.MediaType
	}
	switch ev.Kind {
	case kindImage:
		in.Image, in.ImageType = data, mediaType
	case kindAudio:
		in.Audio, in.AudioType, in.Voice = data, mediaType, ev.Voice
	case kindDocument:
		in.Document, in.DocumentType, in.Filename = data, mediaType, ev.Filename
	}
	return nil
}
