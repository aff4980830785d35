package config

import (
	"fmt"
	"strings"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/transcription"
)

// Transcription is mombot.json's "transcription": the OpenAI-compatible
// speech-to-text endpoint for voice notes. Without it voice notes get a
// reply saying they are not set up. The key is a secret: the caller takes
// it from the environment (MOMBOT_TRANSCRIPTION_API_KEY) and gives it to
// File.Transcriber.
type Transcription struct {
	// URL is the endpoint or the API's base URL
	// ("https://api.openai.com/v1"). Required.
	URL string `json:"url"`
	// Model is the model's name ("whisper-1"). Required.
	Model string `json:"model"`
	// MaxDuration is the longest voice note transcribed, as a duration
	// ("3m"); empty means transcription.DefaultMaxDuration.
	MaxDuration string `json:"max_duration"`
}

// options checks the configuration and returns the client's options,
// without the key. insecure is MOMBOT_INSECURE_TEST_ENDPOINTS=1; Load
// checks the file's syntax with it set, and Transcriber the URL's scheme
// and host with the command's.
func (t *Transcription) options(insecure bool) (transcription.Options, error) {
	o := transcription.Options{URL: strings.TrimSpace(t.URL), Model: strings.TrimSpace(t.Model), InsecureTestEndpoint: insecure}
	switch {
	case o.URL == "":
		return o, fmt.Errorf("transcription.url is required, such as \"https://api.openai.com/v1\"")
	case o.Model == "":
		return o, fmt.Errorf("transcription.model is required, such as \"whisper-1\"")
	}
	var err error
	if o.MaxDuration, err = positive("transcription.max_duration", t.MaxDuration, "3m"); err != nil {
		return o, err
	}
	if _, err := transcription.New(o); err != nil {
		return o, fmt.Errorf("transcription.url: %w", err)
	}
	return o, nil
}

// Transcriber returns the client of the configured endpoint with apiKey
// (spaces around it are trimmed), or nil when none is configured. The URL
// must be https, or http to this machine, unless insecureEndpoints
// (MOMBOT_INSECURE_TEST_ENDPOINTS=1, read by the command) allows http to
// any host.
func (c *File) Transcriber(apiKey string, insecureEndpoints bool) (assistant.Transcriber, error) {
	if c.Transcription == nil {
		return nil, nil
	}
	o, err := c.Transcription.options(insecureEndpoints)
	if err != nil {
		return nil, err
	}
	o.APIKey = strings.TrimSpace(apiKey)
	client, err := transcription.New(o)
	if err != nil {
		return nil, err
	}
	return client, nil
}
