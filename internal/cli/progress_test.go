package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The progress bar is drawn only on a terminal, and then once per percent.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	if p := NewProgress(&buf); p != nil {
		t.Error("a progress bar on a buffer")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p := NewProgress(f); p != nil {
		t.Error("a progress bar on a file")
	}
	var nilBar *Progress
	nilBar.Show(1, 2) // draws nothing, without panicking
	nilBar.Done()
	p := &Progress{w: &buf, last: -1}
	for i := 0; i <= 400; i++ {
		p.Show(i, 400)
	}
	p.Done()
	if got := strings.Count(buf.String(), "\r"); got != 101 {
		t.Errorf("%d frames, want 101 (one per percent)", got)
	}
	if !strings.HasSuffix(buf.String(), "100% 400/400\n") {
		t.Errorf("last frame %q", buf.String()[max(0, buf.Len()-40):])
	}
}
