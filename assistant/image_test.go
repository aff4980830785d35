package assistant_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
)

func pngBytes(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImage(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("A red dot."))
	// Phones mislabel pictures; the bytes decide.
	r, err := e.a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "what is this?", Image: pngBytes(t), ImageType: "image/jpeg"})
	if err != nil || r.Text != "A red dot." {
		t.Fatalf("reply %q, err %v", r.Text, err)
	}
	got := string(sent(t, e.lastRequest())[0].Content)
	if !strings.HasPrefix(got, `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR`) ||
		!strings.HasSuffix(got, `{"type":"text","text":"[Tue 24 Feb 2026 10:35 PST] [From Erin]: what is this?"}]`) {
		t.Errorf("sent %s", got)
	}
	stored := string(e.history(erin)[0].Content)
	want := `[{"type":"text","text":"` + conversation.ImagePlaceholder + `"},{"type":"text","text":"[Tue 24 Feb 2026 10:35 PST] [From Erin]: what is this?"}]`
	if stored != want {
		t.Errorf("stored %s\nwant   %s", stored, want)
	}
}

func TestImageRefused(t *testing.T) {
	bmp := append([]byte("BM"), make([]byte, 64)...)
	tests := []struct {
		name  string
		img   []byte
		typ   string
		err   error
		reply string
	}{
		{"bmp", bmp, "image/bmp", assistant.ErrImageType, assistant.ReplyImageType},
		{"heic declared, unknown bytes", []byte("\x00\x00\x00\x18ftypheic"), "image/heic", assistant.ErrImageType, assistant.ReplyImageType},
		{"too large", append(pngBytes(t), make([]byte, assistant.MaxImageBase64/4*3)...), "image/png", assistant.ErrImageTooLarge, assistant.ReplyImageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r, err := e.a.Handle(context.Background(), assistant.Inbound{From: erin, Image: tt.img, ImageType: tt.typ})
			if !errors.Is(err, tt.err) || r.Text != tt.reply {
				t.Errorf("reply %q, err %v; want %q, %v", r.Text, err, tt.reply, tt.err)
			}
			if len(e.srv.Requests()) != 0 || e.turns(erin) != nil {
				t.Errorf("a refused image was sent or stored")
			}
		})
	}
}

// Just under the limit is sent, and the fake API agrees it is allowed.
func TestImageAtLimit(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("Big picture."))
	img := append(pngBytes(t), make([]byte, assistant.MaxImageBase64/4*3-len(pngBytes(t)))...)
	if _, err := e.a.Handle(context.Background(), assistant.Inbound{From: erin, Image: img}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(e.history(erin)[0].Content), "(a photo)") {
		t.Errorf("stored %s", e.history(erin)[0].Content)
	}
}

// hookLocker is a delivery.Local that calls locked once a caller holds a lock.
type hookLocker struct {
	delivery.Local
	locked func(key string)
}

func (l *hookLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	held, unlock, err := l.Local.Lock(ctx, key)
	if err == nil {
		l.locked(key)
	}
	return held, unlock, err
}

// A photo's message is built (its picture encoded, which takes a while for
// a large one) only once the sender's lock is held, so a text sent just
// after the photo cannot take the lock first and be answered before it.
// The locker changes the picture's last byte when the lock is taken: the
// request must carry the changed picture.
func TestImageEncodedAfterLock(t *testing.T) {
	img := append(pngBytes(t), make([]byte, 3)...) // trailing bytes do not change the type
	locker := &hookLocker{locked: func(string) { img[len(img)-1] = 0xFF }}
	e := newEnv(t, &assistant.Options{Locker: locker})
	e.srv.Enqueue(anthropictest.Text("A red dot."))
	if _, err := e.a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "look", Image: img}); err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Source struct{ Data string }
	}
	if err := json.Unmarshal(sent(t, e.lastRequest())[0].Content, &blocks); err != nil || len(blocks) != 2 {
		t.Fatalf("sent %s (%v)", sent(t, e.lastRequest())[0].Content, err)
	}
	got, err := base64.StdEncoding.DecodeString(blocks[0].Source.Data)
	if err != nil || !bytes.Equal(got, img) {
		t.Errorf("the picture sent ends in %x, want %x: it was encoded before the lock was held", got[len(got)-3:], img[len(img)-3:])
	}
}
