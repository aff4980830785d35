package origin_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/mombot/mombot/internal/origin"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://graph.facebook.com/v21.0/123":      "https://graph.facebook.com:443",
		"https://Graph.Facebook.com:443":            "https://graph.facebook.com:443",
		"http://127.0.0.1:8080/x":                   "http://127.0.0.1:8080",
		"http://127.0.0.1/x":                        "http://127.0.0.1:80",
		"https://[::1]:9090/":                       "https://[::1]:9090",
		"https://lookaside.fbsbx.com/a?mid=1&ext=2": "https://lookaside.fbsbx.com:443",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := origin.Of(u); got != want {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
}

// recorder is a server that records the Authorization header it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization")+"|"+req.Header.Get("Cookie"))
		r.mu.Unlock()
		if h != nil {
			h(w, req)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// A redirect to another port of the same host (the finding: the standard
// client keeps the token then) carries no credentials; one on the same
// origin keeps them.
func TestClientKeepsCredentialsOnTheirOrigin(t *testing.T) {
	other := newRecorder(t, nil)
	var first *recorder
	first = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/media", http.StatusFound)
		case "/here":
			http.Redirect(w, r, first.URL+"/media", http.StatusTemporaryRedirect)
		default:
			io.WriteString(w, "ok")
		}
	})
	c := origin.Client(nil)
	get := func(u string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer secret-token")
		req.Header.Set("Cookie", "session=secret")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get(first.URL + "/away")
	if got := other.got(); len(got) != 1 || got[0] != "|" {
		t.Errorf("the other port got credentials %q, want none", got)
	}
	get(first.URL + "/here")
	if got := first.got(); len(got) != 3 || got[2] != "Bearer secret-token|session=secret" {
		t.Errorf("the same origin got %q, want the credentials on each request", got)
	}
}

func TestClientStopsAfterTenRedirects(t *testing.T) {
	var srv *recorder
	srv = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	})
	_, err := origin.Client(&http.Client{}).Get(srv.URL)
	if !errors.Is(err, origin.ErrTooManyRedirects) {
		t.Errorf("Get: %v, want ErrTooManyRedirects", err)
	}
	if n := len(srv.got()); n != 10 {
		t.Errorf("%d requests, want 10, as the standard client makes", n)
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true,
		"10.0.0.1": false, "whisper": false, "api.openai.com": false, "": false, "0.0.0.0": false,
	} {
		if got := origin.Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
