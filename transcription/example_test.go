package transcription_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mombot/mombot/transcription"
	"github.com/mombot/mombot/transcription/transcriptiontest"
)

// exampleT stands in for a test's t in examples: it runs cleanups at exit.
type exampleT struct{ cleanups []func() }

func (e *exampleT) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) done() {
	for _, f := range e.cleanups {
		f()
	}
}

func Example() {
	t := &exampleT{}
	defer t.done()
	// A stand-in for https://api.groq.com/openai/v1 or https://api.openai.com/v1.
	srv := transcriptiontest.NewServer(t, "gsk_example", "Can you add milk to the grocery list?", "whisper-large-v3-turbo")

	client, err := transcription.New(transcription.Options{
		URL:    srv.URL, // "/audio/transcriptions" is added
		Model:  "whisper-large-v3-turbo",
		APIKey: "gsk_example", // from MOMBOT_TRANSCRIPTION_API_KEY, read by the command
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	note, _ := os.ReadFile("../testdata/voice-note.ogg") // OGG/Opus, as WhatsApp records it
	length, _ := transcription.Duration(note)
	fmt.Println("length:", length.Round(100_000_000))
	text, err := client.Transcribe(context.Background(), note)
	fmt.Println(text, err)
	// Output:
	// length: 7.2s
	// Can you add milk to the grocery list? <nil>
}
