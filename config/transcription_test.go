package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/transcription"
)

func TestTranscriptionConfig(t *testing.T) {
	path := writeConfig(t, `{"transcription": {"url": "https://api.groq.com/openai/v1", "model": "whisper-large-v3-turbo", "max_duration": "90s"}}`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Transcriber(" gsk_secret ", false)
	if err != nil {
		t.Fatal(err)
	}
	client, ok := tr.(*transcription.Client)
	if !ok || client.MaxDuration() != 90*time.Second {
		t.Errorf("transcriber %T, max duration %v", tr, client.MaxDuration())
	}
	// Without "transcription", voice notes are not set up: no transcriber.
	none, err := Load(writeConfig(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := none.Transcriber(" gsk_secret ", false); tr != nil || err != nil {
		t.Errorf("transcriber without configuration: %v, %v", tr, err)
	}
}

func TestTranscriptionConfigErrors(t *testing.T) {
	tests := map[string]string{
		`{"transcription": {"model": "whisper-1"}}`:                                                  "transcription.url is required",
		`{"transcription": {"url": "https://api.openai.com/v1"}}`:                                    "transcription.model is required",
		`{"transcription": {"url": "https://api.openai.com/v1", "model": "m", "max_duration": "x"}}`: "transcription.max_duration",
		`{"transcription": {"url": "https://api.openai.com/v1", "model": "m", "max_duration": "0"}}`: `transcription.max_duration must be a positive duration such as "3m", got "0"`,
		`{"transcription": {"url": "ftp://host/v1", "model": "m"}}`:                                  "transcription.url",
		`{"transcription": {"url": "https://u:sk-x@host/v1", "model": "m"}}`:                         "must not hold credentials",
		`{"transcription": {"url": "https://api.openai.com/v1", "model": "m", "key": "sk-x"}}`:       `unknown key "key"`,
	}
	for body, want := range tests {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		} else if strings.Contains(err.Error(), "sk-x") {
			t.Errorf("%s: the error holds the secret: %v", body, err)
		}
	}
}
