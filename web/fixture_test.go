package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/web"
)

// The family of the tests: two people, and the numbers that must never
// show in a URL, a page or a log.
const (
	erinPhone  = "+14155551234"
	jasonPhone = "+14155556789"
)

var family = []web.Person{{Key: erinPhone, Name: "Erin"}, {Key: jasonPhone, Name: "Jason"}}

// fixture is a page over a real assistant, memory and lists, with a fake
// Messages API, served by httptest.
type fixture struct {
	t      testing.TB
	claude *anthropictest.Server
	store  *memstore.Store
	mem    *conversation.Memory
	lists  *lists.Store
	locker *delivery.Local
	logs   *logtest.Buffer
	srv    *web.Server
	ts     *httptest.Server
	opts   web.Options
}

// newFixture starts a page; change, if set, adjusts its options first.
func newFixture(t testing.TB, change func(*web.Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, claude: anthropictest.NewServer(t), store: memstore.New(), locker: &delivery.Local{}, logs: &logtest.Buffer{}}
	var err error
	if f.mem, err = conversation.New(f.store, nil); err != nil {
		t.Fatal(err)
	}
	f.lists = lists.New(f.mem, nil)
	f.opts = web.Options{
		Memory: f.mem, Lists: f.lists, Locker: f.locker, Family: family,
		ConfigPath: "/home/erin/mombot/mombot.json",
		Logger:     slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if change != nil {
		change(&f.opts)
	}
	tools, err := assistant.NewRegistry(lists.Tools(f.lists)...)
	if err != nil {
		t.Fatal(err)
	}
	people := map[string]assistant.Person{}
	for _, p := range f.opts.Family {
		people[p.Key] = assistant.Person{Name: p.Name}
	}
	if len(f.opts.Family) == 0 {
		people[web.Guest.Key] = assistant.Person{Name: web.Guest.Name}
	}
	a, err := assistant.New(f.claude.Client(), f.mem, &assistant.Options{Family: people, Tools: tools, Logger: f.opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Assistant = a
	if f.srv, err = web.New(f.opts); err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.srv)
	t.Cleanup(func() {
		f.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		for _, r := range f.claude.Rejected() {
			t.Errorf("the fake Messages API rejected a request: %s", r)
		}
		for _, number := range []string{erinPhone, jasonPhone, strings.TrimPrefix(erinPhone, "+"), strings.TrimPrefix(jasonPhone, "+")} {
			if strings.Contains(f.logs.String(), number) {
				t.Errorf("a full phone number reached the log:\n%s", f.logs.String())
			}
		}
	})
	return f
}

// browser is an HTTP client with its own cookies, like one browser.
type browser struct {
	f      *fixture
	client *http.Client
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{f: f, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// response is what a request got.
type response struct {
	status   int
	body     string
	header   http.Header
	location string
}

func (b *browser) do(req *http.Request) response {
	b.f.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: string(body), header: resp.Header, location: resp.Header.Get("Location")}
}

func (b *browser) get(path string) response {
	b.f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.f.ts.URL+path, nil)
	return b.do(req)
}

// post posts form to path as a browser's form does.
func (b *browser) post(path string, form url.Values) response {
	b.f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.f.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// file is a file to attach to a multipart form.
type file struct {
	name, contentType string
	data              []byte
}

// postMultipart posts fields and files as a form with enctype
// multipart/form-data.
func (b *browser) postMultipart(path string, fields url.Values, files map[string]file) response {
	b.f.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	for field, fl := range files {
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{`form-data; name="` + field + `"; filename="` + fl.name + `"`}
		h["Content-Type"] = []string{fl.contentType}
		w, _ := mw.CreatePart(h)
		w.Write(fl.data)
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.f.ts.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the page at path, as its forms carry it.
func (b *browser) csrf(path string) string {
	b.f.t.Helper()
	r := b.get(path)
	m := csrfRE.FindStringSubmatch(r.body)
	if m == nil {
		b.f.t.Fatalf("GET %s: no csrf field (status %d):\n%s", path, r.status, r.body)
	}
	return m[1]
}

// send writes text as the person with id and waits for the reply.
func (b *browser) send(id, text string) response {
	b.f.t.Helper()
	r := b.postMultipart("/people/"+id+"/messages", url.Values{"csrf": {b.csrf("/people/" + id)}, "message": {text}}, nil)
	if r.status != http.StatusSeeOther {
		b.f.t.Fatalf("sending a message: status %d\n%s", r.status, r.body)
	}
	return b.waitReply(id)
}

// waitReply waits until the person's thread has no message pending, and
// returns the thread.
func (b *browser) waitReply(id string) response {
	b.f.t.Helper()
	for range 500 {
		r := b.get("/people/" + id + "/pending")
		if r.body == `{"pending":false}` {
			return b.get("/people/" + id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.f.t.Fatalf("no reply for %s in 10 seconds", id)
	return response{}
}

// userTexts returns the text of every user message of request i that the
// fake received, in order.
func (f *fixture) userTexts(i int) []string {
	f.t.Helper()
	reqs := f.claude.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("the fake received %d requests, want at least %d", len(reqs), i+1)
	}
	var out []string
	for _, raw := range reqs[i].Params.Messages {
		var m conversation.Message
		if err := m.UnmarshalJSON(raw); err != nil {
			f.t.Fatal(err)
		}
		if m.Role == conversation.RoleUser {
			out = append(out, m.Text())
		}
	}
	return out
}
