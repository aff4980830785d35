package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/usage"
)

// fileConfig is the configuration file (--config, MOMBOT_CONFIG, default
// mombot.json when it exists): the family and the settings that are not
// secret. Secrets come from the environment only.
type fileConfig struct {
	// Timezone is the family's time zone (an IANA name); people without
	// their own use it. Empty means the machine's.
	Timezone string `json:"timezone"`
	// Family maps each phone number to its person. Only these numbers are
	// answered on WhatsApp.
	Family map[string]personConfig `json:"family"`

	Model             string `json:"model"`
	MaxTokens         int    `json:"max_tokens"`
	MaxToolIterations int    `json:"max_tool_iterations"`
	// FallbackModel is tried once for a message the model fails
	// (overloaded, 5xx, timed out) or refuses; empty means none.
	FallbackModel string `json:"fallback_model"`
	// RequestTimeout bounds each attempt of an API call, as a duration
	// ("30s"); empty means assistant.DefaultRequestTimeout.
	RequestTimeout string `json:"request_timeout"`
	// SystemPromptFile replaces the built-in system prompt; a relative
	// path is relative to the configuration file.
	SystemPromptFile string `json:"system_prompt_file"`

	WhatsApp whatsAppConfig `json:"whatsapp"`
	// Transcription is the speech-to-text endpoint for voice notes;
	// nil means voice notes are not set up (voice.go).
	Transcription *transcriptionConfig `json:"transcription"`

	// Window bounds the history sent with each message, and CacheTTL is
	// the prompt cache lifetime policy (see window.go).
	Window   windowConfig `json:"window"`
	CacheTTL string       `json:"cache_ttl"`

	// Prices are what mombot usage estimates the cost with.
	Prices *usage.PriceConfig `json:"prices"`

	dir string // the configuration file's folder
}

type personConfig struct {
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
}

type whatsAppConfig struct {
	PhoneNumberID string `json:"phone_number_id"`
	GraphVersion  string `json:"graph_version"`
	GraphURL      string `json:"graph_url"`
	// MaxAge is how old an incoming message may be and still be
	// answered, as a duration ("24h").
	MaxAge string `json:"max_age"`
}

// defaultConfigPath is read when no configuration file is named, if it
// exists.
const defaultConfigPath = "mombot.json"

// loadConfig reads the configuration file at path. With path empty it reads
// mombot.json if there is one, and otherwise returns an empty configuration.
func loadConfig(path string) (*fileConfig, error) {
	named := path != ""
	if !named {
		path = defaultConfigPath
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return &fileConfig{dir: "."}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %w", decodeConfigError(path, data, dec.InputOffset(), err))
	}
	if dec.More() {
		return nil, fmt.Errorf("config %s: more after the configuration's closing }", position(path, data, dec.InputOffset()))
	}
	c.dir = filepath.Dir(path)
	if _, err := c.location(c.Timezone); err != nil {
		return nil, fmt.Errorf("config %s: timezone: %w", path, err)
	}
	// Numbers are kept the way WhatsApp reports senders, "+" and digits,
	// so "+1 (415) 555-1234" in the file matches the sender 14155551234.
	family := make(map[string]personConfig, len(c.Family))
	for number, p := range c.Family {
		norm, err := phone.International(number)
		if err != nil {
			return nil, fmt.Errorf("config %s: family: %q is not a phone number in international form, like +14155551234: %v", path, phone.Mask(number), err)
		}
		if _, dup := family[norm]; dup {
			return nil, fmt.Errorf("config %s: family: %s is listed twice", path, phone.Mask(norm))
		}
		family[norm] = p
		if p.Name == "" {
			return nil, fmt.Errorf("config %s: family member %s has no name", path, phone.Mask(number))
		}
		if _, err := c.location(p.Timezone); err != nil {
			return nil, fmt.Errorf("config %s: family member %s: timezone: %w", path, p.Name, err)
		}
	}
	c.Family = family
	if _, err := c.requestTimeout(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if c.Transcription != nil {
		if _, err := c.Transcription.options(); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if c.WhatsApp.MaxAge != "" {
		d, err := time.ParseDuration(c.WhatsApp.MaxAge)
		if err != nil {
			return nil, fmt.Errorf("config %s: whatsapp.max_age: %w", path, err)
		}
		// Zero would mean the default to the server, so "0" would
		// quietly answer a day of backlog; make the mistake visible.
		if d <= 0 {
			return nil, fmt.Errorf("config %s: whatsapp.max_age must be a positive duration such as \"24h\", got %q", path, c.WhatsApp.MaxAge)
		}
	}
	if _, err := c.Prices.Resolve(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &c, nil
}

// requestTimeout returns request_timeout, or 0 for the default.
func (c *fileConfig) requestTimeout() (time.Duration, error) {
	if c.RequestTimeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.RequestTimeout)
	if err != nil {
		return 0, fmt.Errorf("request_timeout: %w", err)
	}
	// Zero would mean the default, so "0" would quietly wait two minutes
	// an attempt; make the mistake visible.
	if d <= 0 {
		return 0, fmt.Errorf("request_timeout must be a positive duration such as \"30s\", got %q", c.RequestTimeout)
	}
	return d, nil
}

// location returns the zone named tz; empty means the family's, or the
// machine's.
func (c *fileConfig) location(tz string) (*time.Location, error) {
	if tz == "" {
		tz = c.Timezone
	}
	if tz == "" {
		return time.Local, nil
	}
	return time.LoadLocation(tz)
}

// systemPrompt returns the system prompt file's text, or "" for the
// built-in one.
func (c *fileConfig) systemPrompt() (string, error) {
	if c.SystemPromptFile == "" {
		return "", nil
	}
	path := c.SystemPromptFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("config: system prompt: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", fmt.Errorf("config: system prompt file %s is empty", path)
	}
	return string(data), nil
}
