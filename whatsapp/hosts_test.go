package whatsapp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// The Graph API base URL must be https://graph.facebook.com, where the
// access token belongs, unless a test opts in to its fake.
func TestBaseURLIsMetasUnlessATestSaysSo(t *testing.T) {
	tests := []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://graph.facebook.com", false, true},
		{"https://graph.facebook.com:443/", false, true},
		{"https://GRAPH.facebook.com", false, true},
		{"http://graph.facebook.com", false, false},
		{"https://graph.facebook.com:8443", false, false},
		{"https://evil.example", false, false},
		{"https://graph.facebook.com.evil.example", false, false},
		{"https://user:pw@graph.facebook.com", false, false},
		{"https://graph.facebook.com/v21.0", false, false},
		{"ftp://graph.facebook.com", false, false},
		{"http://127.0.0.1:8080", true, true},
		{"https://proxy.internal:8443", true, true},
		{"https://user:pw@proxy.internal", true, false},
		{"ftp://127.0.0.1", true, false},
	}
	for _, tt := range tests {
		cfg := whatsapp.Config{AccessToken: "EAAtok", AppSecret: "sec", PhoneNumberID: "106",
			BaseURL: tt.url, InsecureTestEndpoints: tt.insecure, Logger: quiet}
		_, err := whatsapp.NewClient(cfg)
		if (err == nil) != tt.ok {
			t.Errorf("BaseURL %s, InsecureTestEndpoints %v: NewClient: %v; want ok %v", tt.url, tt.insecure, err, tt.ok)
		}
	}
}

// metaHosts is a stand-in for the network: it answers the Graph API's
// media lookups and sends on graph.facebook.com and the downloads on
// lookaside.fbsbx.com, over https, and records every request that reached
// any host with the Authorization header it carried.
type metaHosts struct {
	// mediaURL is the url the media lookup answers with.
	mediaURL string
	// redirect, when set, makes a download on lookaside.fbsbx.com answer
	// 302 to it.
	redirect string

	mu   sync.Mutex
	seen []string // "host auth"
}

func (m *metaHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, r.URL.Scheme+"://"+r.URL.Host+" "+r.Header.Get("Authorization"))
	m.mu.Unlock()
	answer := func(status int, body string, header ...string) (*http.Response, error) {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	authorized := r.Header.Get("Authorization") == "Bearer "+graphtest.Token
	switch {
	case r.URL.Host == "graph.facebook.com" && r.Method == http.MethodPost:
		return answer(200, `{"messaging_product":"whatsapp","messages":[{"id":"wamid.sent"}]}`)
	case r.URL.Host == "graph.facebook.com" && strings.HasPrefix(r.URL.Path, "/v21.0/"):
		b, _ := json.Marshal(map[string]string{"url": m.mediaURL, "mime_type": "image/jpeg", "id": "1003383421387256"})
		return answer(200, string(b), "Content-Type", "application/json")
	case r.URL.Host == "lookaside.fbsbx.com" && m.redirect != "":
		return answer(http.StatusFound, "", "Location", m.redirect)
	case authorized:
		return answer(200, "\xff\xd8\xff\xe0 the photo")
	}
	return answer(401, "Unauthorized")
}

func (m *metaHosts) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// The access token goes to a media URL only on Meta's media hosts over
// https or on the Graph API's own origin, and never follows a redirect to
// another origin (another host, another port, or http after https): the
// findings of issue 25 replayed against the production configuration.
func TestMediaTokenStaysWithMeta(t *testing.T) {
	const token = "Bearer " + graphtest.Token
	lookaside := "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1003383421387256&ext=1&hash=x"
	tests := []struct {
		name      string
		mediaURL  string
		redirect  string
		photo     bool     // the photo reaches the assistant
		withToken []string // origins that got the token (besides graph.facebook.com)
		without   []string // origins that got a request without it
	}{
		{"Meta's media host", lookaside, "", true, []string{"https://lookaside.fbsbx.com"}, nil},
		{"the Graph API's own origin", "https://graph.facebook.com/media/1003383421387256", "", true, nil, nil},
		{"another host", "https://evil.example/steal?mid=1", "", false, nil, nil},
		{"a look-alike host", "https://lookaside.fbsbx.com.evil.example/x", "", false, nil, nil},
		{"Meta's media host over http", "http://lookaside.fbsbx.com/x", "", false, nil, nil},
		{"Meta's media host on another port", "https://lookaside.fbsbx.com:8443/x", "", false, nil, nil},
		{"a redirect to another host", lookaside, "https://evil.example/x", false, []string{"https://lookaside.fbsbx.com"}, []string{"https://evil.example"}},
		{"a redirect to another port", lookaside, "https://lookaside.fbsbx.com:8443/x", false, []string{"https://lookaside.fbsbx.com"}, []string{"https://lookaside.fbsbx.com:8443"}},
		{"a redirect to http", lookaside, "http://lookaside.fbsbx.com/x", false, []string{"https://lookaside.fbsbx.com"}, []string{"http://lookaside.fbsbx.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			net := &metaHosts{mediaURL: tt.mediaURL, redirect: tt.redirect}
			h := newHarness(t, func(c *setup) {
				c.BaseURL, c.InsecureTestEndpoints = "", false
				c.HTTPClient = &http.Client{Transport: net}
			})
			h.postFile("image.json")
			h.shutdown()
			in := h.resp.inbound()
			switch {
			case tt.photo && (len(in) != 1 || !bytes.HasPrefix(in[0].Image, []byte("\xff\xd8"))):
				t.Errorf("the photo did not reach the assistant: %+v", in)
			case !tt.photo && len(in) != 0:
				t.Errorf("the assistant was asked: %+v", in)
			}
			got := map[string]string{}
			for _, r := range net.requests() {
				o, auth, _ := strings.Cut(r, " ")
				if o == "https://graph.facebook.com" {
					if auth != token {
						t.Errorf("the Graph API got %q", auth)
					}
					continue
				}
				got[o] = auth
			}
			want := map[string]string{}
			for _, o := range tt.withToken {
				want[o] = token
			}
			for _, o := range tt.without {
				want[o] = ""
			}
			if len(got) != len(want) {
				t.Errorf("requests beyond the Graph API: %q, want %q", got, want)
			}
			for o, auth := range want {
				if a, ok := got[o]; !ok || a != auth {
					t.Errorf("%s got Authorization %q (asked: %v), want %q", o, a, ok, auth)
				}
			}
			if !tt.photo {
				if sent := h.logs.String(); !strings.Contains(sent, "photo download failed") {
					t.Errorf("no failed download in the log:\n%s", sent)
				}
			}
		})
	}
}

// With the test opt-in, the fake Graph API is on http on loopback, and
// the media it points to are fetched with the token from its own origin
// only: not from another port of the same host.
func TestInsecureTestEndpointsKeepTheTokenOnTheFakesOrigin(t *testing.T) {
	h := newHarness(t) // graphtest on http://127.0.0.1:port, InsecureTestEndpoints
	h.graph.AddMedia("1003383421387256", []byte("\xff\xd8\xff\xe0 the photo"), "image/jpeg")
	h.postFile("image.json")
	h.shutdown()
	if in := h.resp.inbound(); len(in) != 1 || in[0].Image == nil {
		t.Fatalf("the photo from the fake's own origin did not arrive: %+v", in)
	}

	// A Graph API whose media URL points to another port.
	graph, _ := url.Parse(h.graph.URL)
	elsewhere := "http://" + graph.Hostname() + ":1/whatsapp_business/attachments/x"
	net := &metaHosts{mediaURL: elsewhere}
	h2 := newHarness(t, func(c *setup) {
		c.BaseURL = "http://" + graph.Host
		c.HTTPClient = &http.Client{Transport: routeGraph(graph.Host, net)}
	})
	h2.postFile("image.json")
	h2.shutdown()
	if in := h2.resp.inbound(); len(in) != 0 {
		t.Errorf("the assistant was asked: %+v", in)
	}
	for _, r := range net.requests() {
		if strings.HasPrefix(r, "http://"+graph.Hostname()+":1") {
			t.Errorf("a request reached the other port: %s", r)
		}
	}
	if !strings.Contains(h2.logs.String(), "http://"+graph.Hostname()+":1 is neither the Graph API's origin nor Meta's media hosts") {
		t.Errorf("the log does not say which origin was refused:\n%s", h2.logs.String())
	}
}

// routeGraph serves requests to host as net serves graph.facebook.com.
func routeGraph(host string, net *metaHosts) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == host {
			r = r.Clone(r.Context())
			r.URL.Host = "graph.facebook.com"
		}
		return net.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
