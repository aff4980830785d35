package assistant

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/conversation"
)

// MaxImageBase64 is the Messages API's limit on one base64 image: 5 MB of
// base64 text, about 3.75 MB of image.
const MaxImageBase64 = 5 * 1024 * 1024

// ImageTypes are the image media types the Messages API accepts.
var ImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// timeLayout is how the sender's local date and time are written in front
// of their message: "Tue 24 Feb 2026 10:35 PST".
const timeLayout = "Mon 2 Jan 2006 15:04 MST"

// checkMessage refuses what cannot be sent: a message with neither text
// nor an image, or an image the API would reject. It returns the image's
// media type, or the error refusing the message, from which ErrorMessage
// derives what to do instead. It is cheap, so it runs before the sender's
// turn has come.
func checkMessage(in Inbound) (mediaType string, err error) {
	if in.Video && strings.TrimSpace(in.Text) == "" {
		return "", apology.ErrVideo
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Image) == 0 && in.Voice == nil && in.Document == nil && in.Location == nil && len(in.Contacts) == 0 {
		return "", ErrEmptyMessage
	}
	if len(in.Image) == 0 {
		return "", nil
	}
	if mediaType, err = imageType(in.Image, in.ImageType); err != nil {
		return "", err
	}
	if n := base64.StdEncoding.EncodedLen(len(in.Image)); n > MaxImageBase64 {
		return "", fmt.Errorf("%w: %d bytes of base64, the limit is %d", ErrImageTooLarge, n, MaxImageBase64)
	}
	return mediaType, nil
}

// checkKinds refuses, before the sender's turn has come, what cannot be
// read of the kinds besides text and photos: a document of the wrong type
// or over the limits, and a voice note when no transcriber is set up.
func (a *Assistant) checkKinds(in Inbound) (docKind, error) {
	if in.Voice != nil && a.transcriber == nil {
		return docNone, apology.ErrVoiceNotSetUp
	}
	return checkDocument(in.Document)
}

// userMessage returns the Messages API user message for in, which
// checkMessage accepted, with its image, if any, of mediaType, or its
// document of kind doc; and, for a document, the message to store in its
// place, which has the placeholder "[Document sent: NAME]" instead of the
// file. The text is "[local time] [From NAME]: words", so that the time,
// which changes with every message, is in the new message and never in the
// system prompt, which must not change; words are the person's, with the
// markers of the message's kind (see describe). Encoding a large image
// takes a while, so it is done once the sender's turn has come, keeping
// their messages in order.
func userMessage(in Inbound, mediaType string, doc docKind, words said, p Person, sentAt time.Time) (sent conversation.Message, stored *conversation.Message) {
	head := fmt.Sprintf("[%s] [From %s]:", sentAt.In(p.Location).Format(timeLayout), p.Name)
	text := strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{words.quote, words.body}, func(s string) bool { return s == "" }), " "))
	switch {
	case len(in.Image) > 0:
		if text == "" {
			text = "(a photo)"
		}
		return conversation.NewMessage(conversation.RoleUser, imageBlock(mediaType, in.Image), conversation.TextBlock(head+" "+text)), nil
	case doc != docNone:
		if text == "" {
			text = "(a document)"
		}
		name := documentName(in.Document.Filename)
		caption := conversation.TextBlock(head + " " + text)
		keep := conversation.NewMessage(conversation.RoleUser, conversation.TextBlock(conversation.DocumentPlaceholder(name)), caption)
		return conversation.NewMessage(conversation.RoleUser, documentBlock(doc, in.Document), caption), &keep
	}
	return conversation.UserText(head + " " + text), nil
}

// CutHeader splits the text of a person's message as the assistant
// stores it, "[local time] [From NAME]: words" (see userMessage), into the
// time as written, the name and the words; ok is false, and words is
// text, for a text that does not start so.
func CutHeader(text string) (sentAt, from, words string, ok bool) {
	rest, found := strings.CutPrefix(text, "[")
	if !found {
		return "", "", text, false
	}
	sentAt, rest, found = strings.Cut(rest, "] [From ")
	if !found || strings.Contains(sentAt, "]") {
		return "", "", text, false
	}
	from, words, found = strings.Cut(rest, "]:")
	if !found {
		return "", "", text, false
	}
	return sentAt, from, strings.TrimPrefix(words, " "), true
}

// imageType returns the media type to send for img. The bytes decide when
// they are a supported type, since phones mislabel pictures and the API
// rejects a type that does not match the data; otherwise the declared type
// does, if it is supported.
func imageType(img []byte, declared string) (string, error) {
	sniffed := http.DetectContentType(img)
	if slices.Contains(ImageTypes, sniffed) {
		return sniffed, nil
	}
	declared = strings.ToLower(strings.TrimSpace(strings.SplitN(declared, ";", 2)[0]))
	if declared == "image/jpg" {
		declared = "image/jpeg"
	}
	if slices.Contains(ImageTypes, declared) && sniffed == "application/octet-stream" {
		return declared, nil
	}
	if declared == "" {
		declared = sniffed
	}
	return "", fmt.Errorf("%w: %s", ErrImageType, declared)
}

func imageBlock(mediaType string, img []byte) json.RawMessage {
	var b bytes.Buffer
	b.Grow(base64.StdEncoding.EncodedLen(len(img)) + 80)
	b.WriteString(`{"type":"image","source":{"type":"base64","media_type":"`)
	b.WriteString(mediaType)
	b.WriteString(`","data":"`)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(img) // writes to a bytes.Buffer do not fail
	_ = enc.Close()
	b.WriteString(`"}}`)
	return b.Bytes()
}
