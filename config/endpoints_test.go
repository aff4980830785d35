package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The test opt-in for http endpoints comes from the command, never from
// the file: a file that tries to set it is refused like any unknown key.
func TestInsecureEndpointsNotFromTheFile(t *testing.T) {
	for _, body := range []string{
		`{"insecure_test_endpoints": true}`,
		`{"whatsapp": {"insecure_test_endpoints": true}}`,
		`{"transcription": {"url": "https://api.openai.com/v1", "model": "whisper-1", "insecure_test_endpoint": true}}`,
	} {
		if _, err := Load(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Errorf("Load(%s): %v, want the key refused", body, err)
		}
	}
}

func TestWhatsAppConfigInsecureTestEndpoints(t *testing.T) {
	c, err := Load(writeConfig(t, `{"whatsapp": {"graph_url": "http://127.0.0.1:9"}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := allSecrets()
	for _, insecure := range []bool{false, true} {
		w, err := c.WhatsAppConfig(func(k string) string { return env[k] }, WhatsAppOptions{InsecureTestEndpoints: insecure})
		if err != nil || w.InsecureTestEndpoints != insecure || w.BaseURL != "http://127.0.0.1:9" {
			t.Errorf("InsecureTestEndpoints %v: %+v, %v", insecure, w.InsecureTestEndpoints, err)
		}
	}
}

// transcription.url over http to another machine is refused when the
// command builds the client, unless the test opt-in is set; Load checks
// the syntax only, so that history and usage, which transcribe nothing,
// still read the file.
func TestTranscriptionURLOverHTTP(t *testing.T) {
	tests := []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://api.openai.com/v1", false, true},
		{"http://api.openai.com/v1", false, false},
		{"http://whisper:8000/v1", false, false},
		{"http://127.0.0.1:8000/v1", false, true},
		{"http://whisper:8000/v1", true, true},
	}
	for _, tt := range tests {
		c, err := Load(writeConfig(t, `{"transcription": {"url": "`+tt.url+`", "model": "whisper-1"}}`))
		if err != nil {
			t.Fatalf("Load with %s: %v", tt.url, err)
		}
		tr, err := c.Transcriber("sk-key", tt.insecure)
		if (err == nil) != tt.ok || (err == nil) != (tr != nil) {
			t.Errorf("Transcriber for %s, insecure %v: %v, %v; want ok %v", tt.url, tt.insecure, tr, err, tt.ok)
		}
		if _, err := c.AssistantOptions(func(string) string { return "" }, 10, tt.insecure); (err == nil) != tt.ok {
			t.Errorf("AssistantOptions for %s, insecure %v: %v; want ok %v", tt.url, tt.insecure, err, tt.ok)
		}
	}
}

// The system prompt file goes to the model with every message: a text
// file is read; a kernel file that holds the process's secrets, a folder,
// a binary file or one too large is refused.
func TestSystemPromptFileIsText(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		path string
		ok   bool
	}{
		{write("prompt.md", []byte("You are the Smiths' assistant.\n")), true},
		{write("big.md", []byte(strings.Repeat("a", MaxSystemPromptBytes+1))), false},
		{write("binary.bin", []byte("\x00\x01\x02 not text")), false},
		{write("latin1.txt", []byte("caf\xe9")), false},
		{"/proc/self/environ", false},
		{dir, false},
		{"/dev/null", false},
	}
	for _, tt := range tests {
		c, err := Load(writeConfig(t, `{"system_prompt_file": "`+tt.path+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.SystemPrompt()
		if (err == nil) != tt.ok {
			t.Errorf("SystemPrompt of %s: %.40q, %v; want ok %v", tt.path, p, err, tt.ok)
		}
	}
}

func TestSecretRouting(t *testing.T) {
	c, err := Load(writeConfig(t, `{"system_prompt_file": "p.md", "whatsapp": {"graph_url": "https://graph.facebook.com"}, "transcription": {"url": "https://api.openai.com/v1", "model": "whisper-1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.SecretRouting(), []string{"whatsapp.graph_url", "transcription.url", "system_prompt_file"}; !slices.Equal(got, want) {
		t.Errorf("SecretRouting = %q, want %q", got, want)
	}
	none, _ := Load(writeConfig(t, `{}`))
	if got := none.SecretRouting(); len(got) != 0 || none.Path() == "" {
		t.Errorf("SecretRouting of an empty file = %q, path %q", got, none.Path())
	}
}
