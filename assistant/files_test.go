package assistant_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/assistant"
)

// ReadFiles reads each file named into its field, the document with the
// media type of its extension and its base name; a missing file is the
// error.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	in := assistant.Inbound{Text: "look"}
	err := in.ReadFiles(assistant.Files{Image: write("p.png", "PNG"), Document: write("notes.pdf", "%PDF"), Voice: write("v.ogg", "OggS")})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in.Image, []byte("PNG")) || !bytes.Equal(in.Voice, []byte("OggS")) || in.Text != "look" {
		t.Errorf("image %q, voice %q, text %q", in.Image, in.Voice, in.Text)
	}
	if d := in.Document; d == nil || string(d.Data) != "%PDF" || d.MediaType != "application/pdf" || d.Filename != "notes.pdf" {
		t.Errorf("document %+v", d)
	}

	var none assistant.Inbound
	if err := none.ReadFiles(assistant.Files{}); err != nil || none.Image != nil || none.Document != nil || none.Voice != nil {
		t.Errorf("no files: %+v, %v", none, err)
	}
	if err := none.ReadFiles(assistant.Files{Document: filepath.Join(dir, "missing.txt")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
