package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/usage"
)

// File is the configuration file (--config, MOMBOT_CONFIG, default
// mombot.json when it exists): the family and the settings that are not
// secret.
type File struct {
	// Timezone is the family's time zone (an IANA name); people without
	// their own use it. Empty means the machine's.
	Timezone string `json:"timezone"`
	// Family maps each phone number, in E.164 form once loaded, to its
	// person. Only these numbers are answered on WhatsApp.
	Family map[string]Person `json:"family"`

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

	WhatsApp WhatsApp `json:"whatsapp"`
	// Transcription is the speech-to-text endpoint for voice notes;
	// nil means voice notes are not set up.
	Transcription *Transcription `json:"transcription"`

	// Window bounds the history sent with each message, and CacheTTL is
	// the prompt cache lifetime policy (see File.Window).
	Window   Window `json:"window"`
	CacheTTL string `json:"cache_ttl"`

	// Prices are what mombot usage estimates the cost with.
	Prices *usage.PriceConfig `json:"prices"`

	// Retention is how long what is stored about each person is kept
	// (docs/privacy.md).
	Retention Retention `json:"retention"`

	// FamilyID is the key of the family's long-term notes; empty means
	// conversation.DefaultFamilyID, claimed by the family's numbers
	// (docs/memory.md, "Long-term notes").
	FamilyID string `json:"family_id"`
	// Memory is the long-term memory's settings: notes and summaries.
	Memory Memory `json:"memory"`

	path string // the configuration file, "" when none was read
	dir  string // the configuration file's folder
}

// Person is a family member.
type Person struct {
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
}

// WhatsApp is "whatsapp": the Cloud API settings that are not secret.
type WhatsApp struct {
	PhoneNumberID string `json:"phone_number_id"`
	GraphVersion  string `json:"graph_version"`
	GraphURL      string `json:"graph_url"`
	// MaxAge is how old an incoming message may be and still be
	// answered, as a duration ("24h").
	MaxAge string `json:"max_age"`
}

// DefaultPath is read when no configuration file is named, if it exists.
const DefaultPath = "mombot.json"

// Load reads and checks the configuration file at path. With path empty it
// reads DefaultPath if there is one, and otherwise returns an empty
// configuration. Every error is one line.
func Load(path string) (*File, error) {
	named := path != ""
	if !named {
		path = DefaultPath
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return &File{dir: "."}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %w", decodeError(path, data, dec.InputOffset(), err))
	}
	if dec.More() {
		return nil, fmt.Errorf("config %s: more after the configuration's closing }", position(path, data, dec.InputOffset()))
	}
	c.path, c.dir = path, filepath.Dir(path)
	// at returns path:line:column of the value of the key at keys, or of
	// the key itself with key set, for the errors of the checks below.
	at := func(key bool, keys ...string) string {
		k, v, ok := locate(data, keys...)
		switch {
		case !ok:
			return path
		case key:
			return position(path, data, k)
		}
		return position(path, data, v)
	}
	if _, err := c.Location(c.Timezone); err != nil {
		return nil, fmt.Errorf("config %s: timezone: %w", at(false, "timezone"), err)
	}
	// Numbers are kept the way WhatsApp reports senders, "+" and digits,
	// so "+1 (415) 555-1234" in the file matches the sender 14155551234.
	// They are checked in the order the file writes them, and an error
	// shows the number as typed: the file is the reader's own.
	numbers := slices.SortedFunc(maps.Keys(c.Family), func(a, b string) int {
		ka, _, _ := locate(data, "family", a)
		kb, _, _ := locate(data, "family", b)
		return cmp.Compare(ka, kb)
	})
	family := make(map[string]Person, len(c.Family))
	typed := make(map[string]string, len(c.Family))
	for _, number := range numbers {
		p := c.Family[number]
		pos := at(true, "family", number)
		norm, err := phone.International(number)
		if err != nil {
			return nil, fmt.Errorf("config %s: family: %q: %s; write numbers in international form, like +14155551234", pos, number, strings.TrimPrefix(err.Error(), "phone: "))
		}
		if first, dup := typed[norm]; dup {
			return nil, fmt.Errorf("config %s: family: %q and %q are the same number, listed twice", pos, first, number)
		}
		typed[norm] = number
		family[norm] = p
		if p.Name == "" {
			return nil, fmt.Errorf("config %s: family: %q has no name", pos, number)
		}
		if _, err := c.Location(p.Timezone); err != nil {
			return nil, fmt.Errorf("config %s: family member %s: timezone: %w", at(false, "family", number, "timezone"), p.Name, err)
		}
	}
	c.Family = family
	if _, err := c.requestTimeout(); err != nil {
		return nil, fmt.Errorf("config %s: %w", at(false, "request_timeout"), err)
	}
	if c.Transcription != nil {
		if _, err := c.Transcription.options(true); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if _, err := c.maxAge(); err != nil {
		return nil, fmt.Errorf("config %s: %w", at(false, "whatsapp", "max_age"), err)
	}
	if _, err := c.UsageRetention(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if c.FamilyID != "" {
		if err := conversation.CheckFamilyID(c.FamilyID); err != nil {
			return nil, fmt.Errorf("config %s: family_id: want 1 to 64 characters without control characters or surrounding spaces, got %q", at(false, "family_id"), c.FamilyID)
		}
	}
	if _, _, err := c.Summaries(); err != nil {
		return nil, fmt.Errorf("config %s: %w", at(false, "memory"), err)
	}
	if _, err := c.Prices.Resolve(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &c, nil
}

// positive reads the duration s of the key named key, which must be
// positive: zero would mean the default to the code that takes it, so "0"
// would quietly mean something else; the mistake is made visible. Empty
// means the default, 0. example is a valid value for the error.
func positive(key, s, example string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as %q, got %q", key, example, s)
	}
	return d, nil
}

// requestTimeout returns request_timeout, or 0 for the default.
func (c *File) requestTimeout() (time.Duration, error) {
	return positive("request_timeout", c.RequestTimeout, "30s")
}

// NotesFamily returns the family whose notes the configuration keeps, and
// whether notes are on: not when memory.notes is false.
func (c *File) NotesFamily() (conversation.Family, bool) {
	fam := conversation.Family{ID: c.FamilyID, Members: c.Names()}
	if fam.ID == "" {
		fam.ID, fam.Claim = conversation.DefaultFamilyID, true
	}
	return fam, c.Memory.Notes == nil || *c.Memory.Notes
}

// Retention is the "retention" object of the configuration file.
type Retention struct {
	// Usage is how long the usage ledger keeps who used the assistant on
	// which day, in days ("395d") or as a duration; older days are kept
	// as the family's daily totals, without phone numbers. Empty means
	// conversation.DefaultUsageRetention, about 13 months.
	Usage string `json:"usage"`
}

// UsageRetention returns retention.usage, or 0 for the default.
func (c *File) UsageRetention() (time.Duration, error) {
	if c.Retention.Usage == "" {
		return 0, nil
	}
	d, err := conversation.ParseRetention(c.Retention.Usage)
	if err != nil {
		return 0, fmt.Errorf("retention.usage: %w", err)
	}
	return d, nil
}

// maxAge returns whatsapp.max_age, or 0 for the default.
func (c *File) maxAge() (time.Duration, error) {
	return positive("whatsapp.max_age", c.WhatsApp.MaxAge, "24h")
}

// Location returns the zone named tz; empty means the family's, or the
// machine's.
func (c *File) Location(tz string) (*time.Location, error) {
	if tz == "" {
		tz = c.Timezone
	}
	if tz == "" {
		return time.Local, nil
	}
	return time.LoadLocation(tz)
}

// MaxSystemPromptBytes bounds the system prompt file: some 16,000 tokens,
// far more than a prompt needs.
const MaxSystemPromptBytes = 64 << 10

// SystemPrompt returns the system prompt file's text, or "" for the
// built-in one. The file must be a regular file of UTF-8 text, at most
// MaxSystemPromptBytes: what it holds goes to the model with every
// message, so a device, a folder or one of the kernel's files (such as
// /proc/self/environ, which holds the process's secrets) is refused.
func (c *File) SystemPrompt() (string, error) {
	if c.SystemPromptFile == "" {
		return "", nil
	}
	path := c.SystemPromptFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.dir, path)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("config: system prompt: %w", err)
	}
	switch {
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("config: system prompt file %s is not a regular file", path)
	case info.Size() == 0:
		// The kernel's files (/proc, /sys) say 0 whatever they hold.
		return "", fmt.Errorf("config: system prompt file %s is empty", path)
	case info.Size() > MaxSystemPromptBytes:
		return "", fmt.Errorf("config: system prompt file %s is %d bytes, over the %d allowed", path, info.Size(), MaxSystemPromptBytes)
	}
	data, err := os.ReadFile(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("config: system prompt: %w", err)
	case len(data) > MaxSystemPromptBytes:
		return "", fmt.Errorf("config: system prompt file %s is over the %d bytes allowed", path, MaxSystemPromptBytes)
	case !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0:
		return "", fmt.Errorf("config: system prompt file %s is not UTF-8 text", path)
	case len(bytes.TrimSpace(data)) == 0:
		return "", fmt.Errorf("config: system prompt file %s is empty", path)
	}
	return string(data), nil
}

// Path returns the configuration file read, or "" when there was none.
func (c *File) Path() string { return c.path }

// SecretRouting returns the settings of the file that decide where a
// secret or the family's words go, when set: whatsapp.graph_url (the
// access token), transcription.url (the transcription key and the voice
// notes) and system_prompt_file (a file sent to the model). Whoever can
// write the file can set them, so it should be read-only to the process
// (docs/deploying.md).
func (c *File) SecretRouting() []string {
	var keys []string
	if c.WhatsApp.GraphURL != "" {
		keys = append(keys, "whatsapp.graph_url")
	}
	if c.Transcription != nil && c.Transcription.URL != "" {
		keys = append(keys, "transcription.url")
	}
	if c.SystemPromptFile != "" {
		keys = append(keys, "system_prompt_file")
	}
	return keys
}

// Names maps each family member's phone number to their name.
func (c *File) Names() map[string]string {
	names := make(map[string]string, len(c.Family))
	for number, p := range c.Family {
		names[number] = p.Name
	}
	return names
}

// TranscriptionKeyEnv names the variable that holds the transcription
// endpoint's key, which AssistantOptions reads.
const TranscriptionKeyEnv = "MOMBOT_TRANSCRIPTION_API_KEY"

// AssistantOptions returns the assistant's options that the file and the
// environment, read through getenv, set: the model and its limits, the
// request timeout, the system prompt, the family with their time zones,
// the request window and cache lifetime (WindowOptions, checked against a
// memory that keeps maxTurns turns) and the voice notes' transcriber with
// the key in TranscriptionKeyEnv (Transcriber, with insecureEndpoints),
// the family's notes unless memory.notes is false (Notes) and the running
// summaries unless memory.summaries is false (Summaries).
// The tools and the logger are the caller's to add.
func (c *File) AssistantOptions(getenv func(string) string, maxTurns int, insecureEndpoints bool) (assistant.Options, error) {
	o := assistant.Options{
		Model: c.Model, MaxTokens: c.MaxTokens, MaxToolIterations: c.MaxToolIterations,
		FallbackModel: c.FallbackModel, Family: map[string]assistant.Person{},
	}
	var err error
	if o.RequestTimeout, err = c.requestTimeout(); err != nil {
		return o, err
	}
	if o.SystemPrompt, err = c.SystemPrompt(); err != nil {
		return o, err
	}
	if o.Location, err = c.Location(""); err != nil {
		return o, err
	}
	for number, p := range c.Family {
		loc, err := c.Location(p.Timezone)
		if err != nil {
			return o, err
		}
		o.Family[number] = assistant.Person{Name: p.Name, Location: loc}
	}
	if o.Window, o.CacheTTL, err = c.WindowOptions(getenv, maxTurns); err != nil {
		return o, err
	}
	if o.Transcriber, err = c.Transcriber(getenv(TranscriptionKeyEnv), insecureEndpoints); err != nil {
		return o, err
	}
	if fam, on := c.NotesFamily(); on {
		o.Notes = &assistant.NotesOptions{FamilyID: c.FamilyID, Members: fam.Members}
	}
	if o.Summaries, _, err = c.Summaries(); err != nil {
		return o, err
	}
	return o, nil
}
