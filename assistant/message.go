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

// userMessage returns the Messages API user message for in, or the reply
// and error refusing it. The text is "[local time] [From NAME]: text", so
// that the time, which changes with every message, is in the new message
// and never in the system prompt, which must not change.
func (a *Assistant) userMessage(in Inbound, p Person, sentAt time.Time) (conversation.Message, string, error) {
	text := strings.TrimSpace(in.Text)
	if text == "" && len(in.Image) == 0 {
		return conversation.Message{}, ReplyEmpty, ErrEmptyMessage
	}
	head := fmt.Sprintf("[%s] [From %s]:", sentAt.In(p.Location).Format(timeLayout), p.Name)
	if len(in.Image) == 0 {
		return conversation.UserText(head + " " + text), "", nil
	}
	mediaType, err := imageType(in.Image, in.ImageType)
	if err != nil {
		return conversation.Message{}, ReplyImageType, err
	}
	if n := base64.StdEncoding.EncodedLen(len(in.Image)); n > MaxImageBase64 {
		return conversation.Message{}, ReplyImageTooBig, fmt.Errorf("%w: %d bytes of base64, the limit is %d", ErrImageTooLarge, n, MaxImageBase64)
	}
	if text == "" {
		text = "(a photo)"
	}
	return conversation.NewMessage(conversation.RoleUser, imageBlock(mediaType, in.Image), conversation.TextBlock(head+" "+text)), "", nil
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
