package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant/anthropictest"
)

// testAskKinds: ask sends a PDF (--document) as a document block and
// stores only its placeholder; a voice note (--voice) without
// "transcription" in the configuration is refused with the sentence that
// says so, before the model is asked.
func testAskKinds(t *testing.T, f *askFixture) {
	pdf, err := filepath.Abs(filepath.Join("..", "..", "testdata", "newsletter.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	f.claude.Enqueue(anthropictest.Text("Thursday 12 March at 3pm."))
	stdout, stderr, err := f.mombot("ask", "--from", "+14155551234", "--document", pdf, "when is the bake sale?")
	if err != nil || stdout != "Thursday 12 March at 3pm.\n" {
		t.Fatalf("ask --document: %q, %v\n%s", stdout, err, stderr)
	}
	reqs := f.claude.Requests()
	first := sentMessages(reqs[len(reqs)-1])[0]
	if !strings.Contains(first, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK`) || !strings.Contains(first, `"title":"newsletter.pdf"`) {
		t.Errorf("sent %.300s", first)
	}
	stored := strings.Join(f.stored("+14155551234"), "\n")
	if !strings.Contains(stored, "[Document sent: newsletter.pdf]") || strings.Contains(stored, "JVBERi0") {
		t.Errorf("stored %s", stored)
	}

	voice, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "voice-note.ogg"))
	calls := len(f.claude.Requests())
	stdout, stderr, err = f.mombot("ask", "--from", "+14155551234", "--voice", voice)
	if err == nil || stdout != apology.VoiceNotSetUp+"\n" || !strings.Contains(stderr, "ask: message refused") {
		t.Errorf("ask --voice without transcription: %q, %v, %q", stdout, err, stderr)
	}
	if len(f.claude.Requests()) != calls {
		t.Errorf("the model was asked about a voice note that could not be transcribed")
	}
}
