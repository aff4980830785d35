package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/transcription"
	"github.com/mombot/mombot/whatsapp"
)

// transcriptionConfig is mombot.json's "transcription": the
// OpenAI-compatible speech-to-text endpoint for voice notes. Without it
// voice notes get a reply saying they are not set up. The key is a secret
// and comes from MOMBOT_TRANSCRIPTION_API_KEY only.
type transcriptionConfig struct {
	// URL is the endpoint or the API's base URL
	// ("https://api.openai.com/v1"). Required.
	URL string `json:"url"`
	// Model is the model's name ("whisper-1"). Required.
	Model string `json:"model"`
	// MaxDuration is the longest voice note transcribed, as a duration
	// ("3m"); empty means transcription.DefaultMaxDuration.
	MaxDuration string `json:"max_duration"`
}

// transcriptionKeyEnv names the variable that holds the endpoint's key.
const transcriptionKeyEnv = "MOMBOT_TRANSCRIPTION_API_KEY"

// options checks the configuration and returns the client's options,
// without the key.
func (t *transcriptionConfig) options() (transcription.Options, error) {
	o := transcription.Options{URL: strings.TrimSpace(t.URL), Model: strings.TrimSpace(t.Model)}
	switch {
	case o.URL == "":
		return o, fmt.Errorf("transcription.url is required, such as \"https://api.openai.com/v1\"")
	case o.Model == "":
		return o, fmt.Errorf("transcription.model is required, such as \"whisper-1\"")
	}
	if t.MaxDuration != "" {
		d, err := time.ParseDuration(t.MaxDuration)
		if err != nil {
			return o, fmt.Errorf("transcription.max_duration: %w", err)
		}
		if d <= 0 {
			return o, fmt.Errorf("transcription.max_duration must be a positive duration such as \"3m\", got %q", t.MaxDuration)
		}
		o.MaxDuration = d
	}
	if _, err := transcription.New(o); err != nil {
		return o, fmt.Errorf("transcription.url: %w", err)
	}
	return o, nil
}

// transcriber returns the client of the configured endpoint, or nil when
// none is configured.
func (c *fileConfig) transcriber(e *env) (assistant.Transcriber, error) {
	if c.Transcription == nil {
		return nil, nil
	}
	o, err := c.Transcription.options()
	if err != nil {
		return nil, err
	}
	o.APIKey = strings.TrimSpace(e.getenv(transcriptionKeyEnv))
	client, err := transcription.New(o)
	if err != nil {
		return nil, err
	}
	return client, nil
}

// responder answers WhatsApp messages with the assistant, and remembers
// the replies sent, by the ids WhatsApp gave them, so that a later reply
// quoting one brings its text.
type responder struct {
	a   *assistant.Assistant
	mem *conversation.Memory
	log *slog.Logger
	m   *metrics.Metrics // nil without --metrics-listen
}

var _ whatsapp.SentRecorder = responder{}

// Respond implements whatsapp.Responder. Handle logs its failures and
// always returns a reply fit to send, kind when something went wrong.
func (r responder) Respond(ctx context.Context, in whatsapp.Inbound) (string, error) {
	start := time.Now()
	reply, err := r.a.Handle(ctx, inbound(in))
	if r.m != nil {
		r.m.Replied(time.Since(start), err)
	}
	return reply.Text, nil
}

// RecordSent implements whatsapp.SentRecorder.
func (r responder) RecordSent(ctx context.Context, to string, s whatsapp.Sent) {
	m := conversation.RecentMessage{ID: s.ID, Role: conversation.RoleAssistant, Text: s.Text, At: s.Time}
	if err := r.mem.Remember(ctx, to, m); err != nil {
		r.log.Warn("mombot: remembering a reply sent, for later replies to it", "phone", phone.Mask(to), "err", err)
	}
}

// inbound is the assistant's view of a WhatsApp message.
func inbound(in whatsapp.Inbound) assistant.Inbound {
	out := assistant.Inbound{
		From: in.From, Text: in.Text, Image: in.Image, ImageType: in.ImageType, Time: in.Time,
		ID: in.ID, ReplyTo: in.ReplyTo, Video: in.Video,
	}
	if in.Audio != nil {
		// Audio files other than voice notes are passed on too: the
		// transcriber reads the length of what it can and says what
		// works for the rest.
		out.Voice = in.Audio
	}
	if in.Document != nil {
		out.Document = &assistant.Document{Data: in.Document, MediaType: in.DocumentType, Filename: in.Filename}
	}
	if l := in.Location; l != nil {
		out.Location = &assistant.Location{Latitude: l.Latitude, Longitude: l.Longitude, Name: l.Name, Address: l.Address, URL: l.URL}
	}
	for _, c := range in.Contacts {
		out.Contacts = append(out.Contacts, assistant.Contact{Name: c.Name, Phones: c.Phones, Emails: c.Emails, Organization: c.Organization})
	}
	return out
}

// readKinds reads the files of ask's --document and --voice into in.
func readKinds(in *assistant.Inbound, docPath, voicePath string) error {
	if docPath != "" {
		data, err := os.ReadFile(docPath)
		if err != nil {
			return err
		}
		in.Document = &assistant.Document{Data: data, MediaType: mime.TypeByExtension(filepath.Ext(docPath)), Filename: filepath.Base(docPath)}
	}
	if voicePath != "" {
		data, err := os.ReadFile(voicePath)
		if err != nil {
			return err
		}
		in.Voice = data
	}
	return nil
}

// refusedKind reports whether err refused a voice note, a document or a
// video before the model was asked, which ask reports as a refused message.
func refusedKind(err error) bool {
	for _, sentinel := range []error{
		apology.ErrVoiceNotSetUp, apology.ErrVoiceTooLong, apology.ErrAudioFormat, apology.ErrTranscription, apology.ErrVoiceEmpty,
		apology.ErrDocumentType, apology.ErrDocumentTooLarge, apology.ErrDocumentLocked, apology.ErrVideo,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}
