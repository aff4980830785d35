package whatsapp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// FuzzWebhook posts arbitrary bodies, correctly signed, to the handler,
// which must answer 200 or 400 and never panic, here or in the background
// processing; the same body unsigned is refused with 401.
func FuzzWebhook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"messages":[{"from":"16505551234","id":"wamid.x","type":"image","image":{"id":"nope"}}]}}]}]}`))
	graph := graphtest.NewServer(f)
	client, err := whatsapp.NewClient(whatsapp.Config{
		AccessToken:           graphtest.Token,
		PhoneNumberID:         graphtest.PhoneNumberID,
		AppSecret:             appSecret,
		BaseURL:               graph.URL,
		InsecureTestEndpoints: true,
		RetryDelay:            time.Millisecond,
		Family:                map[string]string{sheena: "Sheena"},
		Logger:                quiet,
		Now:                   func() time.Time { return sampleTime },
	})
	if err != nil {
		f.Fatal(err)
	}
	pipe := delivery.New(stage{client: client, resp: &recorder{}}, &delivery.Options{Inbox: &delivery.Volatile{}, Logger: quiet, Now: func() time.Time { return sampleTime }})
	srv, err := whatsapp.NewServer(client, pipe, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			f.Error(err)
		}
	})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		r.Header.Set(whatsapp.SignatureHeader, graphtest.Sign([]byte(appSecret), body))
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Errorf("signed delivery: status %d", w.Code)
		}
		r = httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		w = httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("unsigned delivery: status %d", w.Code)
		}
	})
}
