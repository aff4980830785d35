package web_test

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/web"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAttachments checks files sent from the page: a photo reaches the
// model as an image, a text file as a document, and what the assistant
// cannot read is answered with what works, not sent.
func TestAttachments(t *testing.T) {
	tests := []struct {
		name       string
		file       file
		caption    string
		wantBlock  string // a block type in the request; "" means no request
		wantThread string
	}{
		{"photo", file{"kids.png", "image/png", pngBytes(t)}, "Look!", `"type":"image"`, "[Image sent: photo]\nLook!"},
		{"photo without a caption", file{"kids.png", "application/octet-stream", pngBytes(t)}, "", `"type":"image"`, "[Image sent: photo]\n(a photo)"},
		{"text file", file{"menu.txt", "text/plain", []byte("Monday: soup\nTuesday: pasta\n")}, "This week's menu", `"type":"document"`, "[Document sent: menu.txt]\nThis week&#39;s menu"},
		{"a program", file{"setup.exe", "application/x-msdownload", []byte("MZ\x90\x00\x03")}, "", "", "not remembered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			b := f.browser()
			f.claude.Enqueue(anthropictest.Text("Got it."))
			r := b.postMultipart("/people/erin/messages", url.Values{"csrf": {b.csrf("/people/erin")}, "message": {tt.caption}}, map[string]file{"attachment": tt.file})
			if r.status != http.StatusSeeOther {
				t.Fatalf("status %d:\n%s", r.status, r.body)
			}
			page := b.waitReply("erin")
			reqs := f.claude.Requests()
			switch {
			case tt.wantBlock == "" && len(reqs) != 0:
				t.Errorf("the file reached the API")
			case tt.wantBlock != "" && (len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte(tt.wantBlock))):
				t.Errorf("the request lacks a %s block", tt.wantBlock)
			}
			if !strings.Contains(page.body, tt.wantThread) {
				t.Errorf("the thread lacks %q:\n%s", tt.wantThread, page.body)
			}
		})
	}
}

// TestUploadTooLarge checks that a form over the limit is refused with 413
// and reaches nobody.
func TestUploadTooLarge(t *testing.T) {
	f := newFixture(t, func(o *web.Options) { o.MaxUpload = 1 << 20 })
	b := f.browser()
	big := bytes.Repeat([]byte("x"), 2<<20)
	r := b.postMultipart("/people/erin/messages", url.Values{"csrf": {b.csrf("/people/erin")}, "message": {"big"}}, map[string]file{"attachment": {"big.txt", "text/plain", big}})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413:\n%s", r.status, r.body)
	}
	if n := len(f.claude.Requests()); n != 0 {
		t.Errorf("the API was called %d times", n)
	}
}
