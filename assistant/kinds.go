package assistant

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/conversation"
)

// What the model is given for each kind of message besides text and
// photos. Every kind becomes text the model reads in the person's message,
// except documents: a PDF is a "document" block with a base64 source, which
// Claude reads natively (pages as text and images), and a plain-text file a
// "document" block with a text source
// (https://docs.claude.com/en/docs/build-with-claude/pdf-support). In the
// stored history a document is the placeholder "[Document sent: NAME]",
// as a photo is "[Image sent: photo]": the file is read in its own turn,
// what was said about it is remembered, and the bytes are never stored or
// sent again.

// Limits of documents. The Messages API takes requests of up to 32 MB and
// PDFs of up to 100 pages (the PDF support page above); base64 makes a file
// 4/3 larger, so a PDF of 20 MiB is about 27 MB of request, which leaves
// room for the conversation.
const (
	MaxPDFBytes  = 20 << 20
	MaxPDFPages  = 100
	MaxTextBytes = 256 << 10 // a plain-text file: about 60,000 tokens
	// maxQuote bounds the quoted message given to the model, in bytes.
	maxQuote = 600
)

// TextDocumentTypes are the media types read as plain text, and
// TextDocumentExtensions the file name extensions; phones often send
// "application/octet-stream" for a .csv.
var (
	TextDocumentTypes      = []string{"text/plain", "text/csv", "text/markdown", "text/x-markdown", "text/tab-separated-values"}
	TextDocumentExtensions = []string{".txt", ".csv", ".md", ".markdown", ".tsv"}
)

// Document is a file the person sent.
type Document struct {
	// Data is the file.
	Data []byte
	// MediaType is its media type as the sender's phone declared it, such
	// as "application/pdf"; it may be empty or wrong.
	MediaType string
	// Filename is the file's name as sent ("newsletter.pdf"); it may be
	// empty.
	Filename string
}

// Location is a location the person shared.
type Location struct {
	Latitude, Longitude float64
	// Name and Address describe a place picked from a map; both may be
	// empty for a dropped pin. URL is the place's web site, if any.
	Name, Address, URL string
}

// Contact is a contact card the person shared.
type Contact struct {
	Name string
	// Phones and Emails are as the card has them, each possibly followed
	// by its label: "+1 415 555 0100 (WORK)".
	Phones, Emails []string
	// Organization is the company, and its department or title, if any.
	Organization string
}

// Transcriber turns a voice note into text: package transcription's Client.
// Transcribe's errors wrap the [apology] sentinels for voice notes
// (ErrAudioFormat, ErrVoiceTooLong, ErrTranscription, ErrVoiceEmpty).
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte) (string, error)
}

// docKind is how a document is given to the model.
type docKind int

const (
	docNone docKind = iota
	docPDF
	docText
)

// checkDocument refuses a document the model cannot be given, with the
// sentinel whose sentence says what works: a type other than PDF or plain
// text, a PDF over the API's limits or encrypted, a text file too large or
// not text. It is cheap, so it runs before the sender's turn has come.
func checkDocument(d *Document) (docKind, error) {
	if d == nil {
		return docNone, nil
	}
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(d.MediaType, ";", 2)[0]))
	ext := strings.ToLower(path.Ext(d.Filename))
	switch {
	case mt == "application/pdf" || ext == ".pdf":
		return docPDF, checkPDF(d.Data)
	case slices.Contains(TextDocumentTypes, mt) || slices.Contains(TextDocumentExtensions, ext):
		switch {
		case len(d.Data) > MaxTextBytes:
			return docText, fmt.Errorf("%w: %d bytes of text, the limit is %d", apology.ErrDocumentTooLarge, len(d.Data), MaxTextBytes)
		case bytes.IndexByte(d.Data, 0) >= 0:
			// UTF-16 or a binary file named .txt: not text the model
			// could read.
			return docText, fmt.Errorf("%w: %s holds NUL bytes, not UTF-8 text", apology.ErrDocumentType, documentName(d.Filename))
		}
		return docText, nil
	}
	if mt == "" {
		mt = "no media type"
	}
	return docNone, fmt.Errorf("%w: %s (%s)", apology.ErrDocumentType, documentName(d.Filename), mt)
}

// documentName returns a file name fit to show the model and to store in
// the placeholder: its base name, without control characters or brackets,
// at most 80 characters; "document" when there is none.
func documentName(name string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '[' || r == ']' || r == utf8.RuneError {
			return ' '
		}
		return r
	}, name)
	name = strings.Join(strings.Fields(name), " ")
	if r := []rune(name); len(r) > 80 {
		name = string(r[:77]) + "..."
	}
	if name == "" || name == "." || name == "/" {
		return "document"
	}
	return name
}

// documentBlock returns the document block that gives the model d.
func documentBlock(kind docKind, d *Document) []byte {
	var b bytes.Buffer
	title := quote(documentName(d.Filename))
	if kind == docPDF {
		b.Grow(base64.StdEncoding.EncodedLen(len(d.Data)) + 120)
		b.WriteString(`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"`)
		enc := base64.NewEncoder(base64.StdEncoding, &b)
		_, _ = enc.Write(d.Data) // writes to a bytes.Buffer do not fail
		_ = enc.Close()
		b.WriteString(`"},"title":`)
		b.Write(title)
		b.WriteString(`}`)
		return b.Bytes()
	}
	text := strings.TrimPrefix(strings.ToValidUTF8(string(d.Data), "\uFFFD"), "\uFEFF")
	if strings.TrimSpace(text) == "" {
		text = "(the file is empty)"
	}
	b.WriteString(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":`)
	b.Write(quote(text))
	b.WriteString(`},"title":`)
	b.Write(title)
	b.WriteString(`}`)
	return b.Bytes()
}

// The marks of a forwarded message: its words, file or voice are someone
// else's, passed on.
const (
	forwardedMark     = "[Forwarded message]"
	forwardedManyMark = "[Forwarded message, forwarded many times]"
)

// said is what the person's message says, as text: the markers of its
// kind, a voice note's transcript, a location or contact card written out,
// and their words.
type said struct {
	quote string // "[Replying to ...]", or empty
	body  string // everything else
}

// describe returns the text of in for the model, with transcript standing
// for a voice note and quoted for the message it replies to (nil if none
// or unknown).
func describe(in Inbound, transcript string, quoted *conversation.RecentMessage) said {
	var s said
	switch {
	case quoted != nil:
		who := "Replying to"
		if quoted.Role == conversation.RoleAssistant {
			who = "Replying to your message"
		}
		s.quote = fmt.Sprintf("[%s: %s]", who, strconv.Quote(clipQuote(oneLine(quoted.Text), maxQuote)))
	case in.ReplyTo != "":
		s.quote = "[Replying to an earlier message that is no longer remembered]"
	}
	var parts []string
	switch {
	case in.ForwardedMany:
		parts = append(parts, forwardedManyMark)
	case in.Forwarded:
		parts = append(parts, forwardedMark)
	}
	if in.Voice != nil {
		parts = append(parts, "[Voice note, transcribed] "+transcript)
	}
	if in.Location != nil {
		parts = append(parts, describeLocation(*in.Location))
	}
	for _, c := range in.Contacts {
		parts = append(parts, describeContact(c))
	}
	if in.Video {
		parts = append(parts, "[Video sent: you cannot watch it, only read its caption]")
	}
	if text := strings.TrimSpace(in.Text); text != "" {
		parts = append(parts, text)
	}
	s.body = strings.Join(parts, "\n")
	return s
}

func describeLocation(l Location) string {
	var b strings.Builder
	b.WriteString("[Location shared:")
	for _, s := range []string{l.Name, l.Address} {
		if s = oneLine(s); s != "" {
			b.WriteString(" " + s + ",")
		}
	}
	fmt.Fprintf(&b, " latitude %s, longitude %s", strconv.FormatFloat(l.Latitude, 'f', -1, 64), strconv.FormatFloat(l.Longitude, 'f', -1, 64))
	if u := oneLine(l.URL); u != "" {
		b.WriteString(", " + u)
	}
	b.WriteString("]")
	return b.String()
}

func describeContact(c Contact) string {
	fields := []string{oneLine(c.Name)}
	if fields[0] == "" {
		fields[0] = "no name"
	}
	if o := oneLine(c.Organization); o != "" {
		fields = append(fields, o)
	}
	for _, p := range c.Phones {
		if p = oneLine(p); p != "" {
			fields = append(fields, "phone "+p)
		}
	}
	for _, e := range c.Emails {
		if e = oneLine(e); e != "" {
			fields = append(fields, "email "+e)
		}
	}
	return "[Contact card: " + strings.Join(fields, "; ") + "]"
}

// remembered is the text of in kept among the recent messages, so that a
// later reply quoting it can be given it: what the person sent, as they
// would describe it, without the date or the quote.
func remembered(in Inbound, s said) string {
	var marks []string
	switch {
	case len(in.Image) > 0:
		marks = append(marks, "[Photo]")
	case in.Document != nil:
		marks = append(marks, "[Document: "+documentName(in.Document.Filename)+"]")
	}
	if s.body != "" {
		marks = append(marks, s.body)
	}
	return strings.Join(marks, " ")
}

// oneLine returns s with its white space, line breaks included, collapsed.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipQuote returns s cut to at most n bytes at a character boundary, ended
// with "…" when cut.
func clipQuote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// prepareKinds does what the message needs once the sender's turn has
// come: the voice note is transcribed, and the message it replies to
// looked up. An error (a failed transcription) is the message's answer;
// nothing is stored.
func (a *Assistant) prepareKinds(ctx context.Context, in Inbound, log *slog.Logger) (said, error) {
	transcript := ""
	if in.Voice != nil {
		var err error
		transcript, err = a.transcriber.Transcribe(ctx, in.Voice)
		if err != nil {
			if !errors.Is(err, apology.ErrVoiceTooLong) && !errors.Is(err, apology.ErrAudioFormat) && !errors.Is(err, apology.ErrVoiceEmpty) {
				log.Warn("assistant: voice note not transcribed", "err", err)
			} else {
				log.Info("assistant: voice note refused", "reason", err)
			}
			return said{}, fmt.Errorf("assistant: handle: %w", err)
		}
	}
	var quoted *conversation.RecentMessage
	if in.ReplyTo != "" && in.From != conversation.SystemSender {
		m, err := a.mem.Recall(ctx, in.From, in.ReplyTo)
		switch {
		case err == nil:
			quoted = &m
		case errors.Is(err, conversation.ErrNotFound):
			log.Debug("assistant: the quoted message is not remembered", "reply_to", in.ReplyTo)
		default:
			log.Warn("assistant: looking up the quoted message", "err", err)
		}
	}
	return describe(in, transcript, quoted), nil
}

// rememberInbound keeps in among the person's recent messages, so that a
// later reply to it brings its text. A failure is logged only: the answer
// matters more.
func (a *Assistant) rememberInbound(ctx context.Context, in Inbound, s said, sentAt time.Time, log *slog.Logger) {
	if in.ID == "" || in.From == conversation.SystemSender {
		return
	}
	text := remembered(in, s)
	if text == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	m := conversation.RecentMessage{ID: in.ID, Role: conversation.RoleUser, Text: text, At: sentAt}
	if err := a.mem.Remember(ctx, in.From, m); err != nil {
		log.Warn("assistant: remembering the message for later replies", "err", err)
	}
}
