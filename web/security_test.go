package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/web"
)

// changes are every POST of the page but the login, with a form that
// would make a change if its CSRF token were right.
var changes = []struct {
	path string
	form url.Values
}{
	{"/people/erin/messages", url.Values{"message": {"hi"}}},
	{"/people/erin/clear", url.Values{}},
	{"/lists/items", url.Values{"list": {"grocery"}, "item": {"eggs"}}},
	{"/lists/items/delete", url.Values{"list": {"grocery"}, "item": {"milk"}}},
	{"/lists/delete", url.Values{"list": {"grocery"}}},
	{"/logout", url.Values{}},
}

// TestCSRF checks that every change needs the session's CSRF token: none,
// a wrong one, another session's, or one from another site's page is
// refused with 403, and nothing changes.
func TestCSRF(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.lists.Add(t.Context(), "grocery", []string{"milk"}, ""); err != nil {
		t.Fatal(err)
	}
	b, other := f.browser(), f.browser()
	good := b.csrf("/people/erin")
	otherCSRF := other.csrf("/people/erin")
	for _, c := range changes {
		for _, tt := range []struct {
			name    string
			csrf    []string
			headers map[string]string
		}{
			{"no token", nil, nil},
			{"empty token", []string{""}, nil},
			{"wrong token", []string{good + "x"}, nil},
			{"another session's token", []string{otherCSRF}, nil},
			{"from another site", []string{good}, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}},
		} {
			t.Run(c.path+"/"+tt.name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range c.form {
					form[k] = v
				}
				if tt.csrf != nil {
					form["csrf"] = tt.csrf
				}
				req, _ := http.NewRequest(http.MethodPost, f.ts.URL+c.path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				if r := b.do(req); r.status != http.StatusForbidden {
					t.Errorf("status %d, want 403:\n%s", r.status, r.body)
				}
			})
		}
	}
	if items, err := f.lists.Items(context.Background(), "grocery"); err != nil || len(items) != 1 || items[0].Text != "milk" {
		t.Errorf("the lists changed: %v, %v", items, err)
	}
	if n := len(f.claude.Requests()); n != 0 {
		t.Errorf("a refused post reached the API %d times", n)
	}
	// And with the right token, from the page itself, it works.
	if r := b.post("/lists/items", url.Values{"csrf": {good}, "list": {"grocery"}, "item": {"eggs"}}); r.status != http.StatusSeeOther {
		t.Errorf("a post with the token: status %d:\n%s", r.status, r.body)
	}
}

// TestHeaders checks the headers of every page: a strict
// Content-Security-Policy without inline script or style, no framing, no
// sniffing, no caching.
func TestHeaders(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	for _, path := range []string{"/", "/people/erin", "/lists", "/usage", "/nothing", "/static/style.css"} {
		r := b.get(path)
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q allows something unsafe", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := r.header.Get(k); got != want {
				t.Errorf("GET %s: %s: %q, want %q", path, k, got, want)
			}
		}
	}
	// No page has inline script or style: the policy would block it.
	for _, path := range []string{"/", "/people/erin", "/lists", "/usage"} {
		body := b.get(path).body
		if regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style="| on[a-z]+="`).MatchString(body) {
			t.Errorf("GET %s has inline script or style:\n%s", path, body)
		}
	}
}

// TestNoPhoneNumbers checks that no page's links, nor any page, hold a
// family member's number in full: people are named by ids made from their
// names.
func TestNoPhoneNumbers(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	f.claude.Enqueue(anthropictest.Text("Hi."))
	b.send("erin", "Hello")
	for _, path := range []string{"/", "/people/erin", "/people/jason", "/lists", "/usage", "/usage?person=erin"} {
		body := b.get(path).body
		for _, number := range []string{erinPhone, jasonPhone, "4155551234", "4155556789"} {
			if strings.Contains(body, number) {
				t.Errorf("GET %s shows %s in full", path, number)
			}
		}
	}
}

// TestLogin checks the login with a token: every request, the style
// sheet's too, needs it; a wrong token is refused; the session cookie is
// HttpOnly and SameSite=Strict; and it is no good for a page with another
// token.
func TestLogin(t *testing.T) {
	const token = "correct-horse-battery-staple"
	f := newFixture(t, func(o *web.Options) { o.Token = token })
	web.SetLoginDelay(f.srv, 0)
	b := f.browser()
	for _, path := range []string{"/", "/people/erin", "/lists", "/usage", "/static/style.css", "/people/erin/pending"} {
		r := b.get(path)
		if r.status != http.StatusSeeOther || !strings.HasPrefix(r.location, "/login?next=") {
			t.Errorf("GET %s without logging in: status %d, location %q", path, r.status, r.location)
		}
	}
	login := b.get("/login?next=/lists")
	if login.status != http.StatusOK || !strings.Contains(login.body, `type="password" name="token"`) {
		t.Fatalf("the login page: status %d:\n%s", login.status, login.body)
	}
	// The login page's style is inline, with the nonce the policy names.
	if m := regexp.MustCompile(`<style nonce="([^"]+)">`).FindStringSubmatch(login.body); m == nil || !strings.Contains(login.header.Get("Content-Security-Policy"), "'nonce-"+m[1]+"'") {
		t.Errorf("the login page's style and policy do not match: %q", login.header.Get("Content-Security-Policy"))
	}
	csrf := csrfRE.FindStringSubmatch(login.body)[1]
	for _, c := range changes {
		if r := b.post(c.path, url.Values{"csrf": {csrf}}); r.status != http.StatusForbidden {
			t.Errorf("POST %s before logging in: status %d, want 403", c.path, r.status)
		}
	}
	if r := b.post("/login", url.Values{"csrf": {csrf}, "token": {token + "x"}, "next": {"/lists"}}); r.status != http.StatusUnauthorized {
		t.Errorf("a wrong token: status %d, want 401", r.status)
	}
	if r := b.post("/login", url.Values{"token": {token}, "next": {"/lists"}}); r.status != http.StatusForbidden {
		t.Errorf("a login without the form's CSRF token: status %d, want 403", r.status)
	}
	r := b.post("/login", url.Values{"csrf": {csrf}, "token": {token}, "next": {"/lists"}})
	if r.status != http.StatusSeeOther || r.location != "/lists" {
		t.Fatalf("the right token: status %d, location %q", r.status, r.location)
	}
	cookie := r.header.Get("Set-Cookie")
	for _, want := range []string{"mombot_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("the session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("the session cookie %q over plain HTTP is Secure: the browser would never send it back", cookie)
	}
	if r := b.get("/usage"); r.status != http.StatusOK {
		t.Errorf("GET /usage logged in: status %d", r.status)
	}
	// Behind a reverse proxy that terminates HTTPS, it is Secure.
	proxied, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/login", nil)
	proxied.Header.Set("X-Forwarded-Proto", "https")
	if c := f.browser().do(proxied).header.Get("Set-Cookie"); !strings.Contains(c, "; Secure") {
		t.Errorf("the session cookie behind an HTTPS proxy: %q, want Secure", c)
	}
	if r := b.get("/static/style.css"); r.status != http.StatusOK {
		t.Errorf("GET /static/style.css logged in: status %d", r.status)
	}

	// The session is the token's: a page with another token refuses it.
	g := newFixture(t, func(o *web.Options) { o.Token = token + "-new" })
	req, _ := http.NewRequest(http.MethodGet, g.ts.URL+"/usage", nil)
	for _, c := range b.client.Jar.Cookies(mustURL(t, f.ts.URL)) {
		req.AddCookie(c)
	}
	if r := g.browser().do(req); r.status != http.StatusSeeOther {
		t.Errorf("a session of another token: status %d, want 303 to the login", r.status)
	}

	// The login sends nowhere but this page.
	for _, next := range []string{"https://evil.example/", "//evil.example/", `/\evil.example`} {
		b2 := f.browser()
		l := b2.get("/login")
		c := csrfRE.FindStringSubmatch(l.body)[1]
		if r := b2.post("/login", url.Values{"csrf": {c}, "token": {token}, "next": {next}}); r.location != "/" {
			t.Errorf("login with next=%q sends to %q, want /", next, r.location)
		}
	}

	// Logging out ends the session.
	out := b.post("/logout", url.Values{"csrf": {b.csrf("/lists")}})
	if out.status != http.StatusSeeOther || !strings.Contains(out.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: status %d, Set-Cookie %q", out.status, out.header.Get("Set-Cookie"))
	}
	if r := b.get("/lists"); r.status != http.StatusSeeOther {
		t.Errorf("GET /lists after logging out: status %d, want 303", r.status)
	}
	if strings.Contains(f.logs.String(), token) {
		t.Errorf("the token reached the log:\n%s", f.logs.String())
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestShortToken checks that a token too short to be safe is refused.
func TestShortToken(t *testing.T) {
	f := newFixture(t, nil)
	o := f.opts
	o.Token = "secret"
	if _, err := web.New(o); !errors.Is(err, web.ErrConfig) {
		t.Errorf("New with a 6-character token: %v, want ErrConfig", err)
	}
}

// TestCheckAddr checks which addresses the page may listen on, with and
// without a login.
func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr      string
		login     bool
		loopback  bool // want ErrNotLoopback without a login
		malformed bool
	}{
		{addr: "127.0.0.1:8080"},
		{addr: "127.0.0.2:0"},
		{addr: "[::1]:8080"},
		{addr: "localhost:8080"},
		{addr: ":8080", loopback: true},
		{addr: "0.0.0.0:8080", loopback: true},
		{addr: "[::]:8080", loopback: true},
		{addr: "192.168.1.10:8080", loopback: true},
		{addr: "example.com:8080", loopback: true},
		{addr: "0.0.0.0:8080", login: true},
		{addr: ":8080", login: true},
		{addr: "8080", malformed: true},
		{addr: "8080", login: true, malformed: true},
	}
	for _, tt := range tests {
		err := web.CheckAddr(tt.addr, tt.login)
		switch {
		case tt.malformed && (err == nil || errors.Is(err, web.ErrNotLoopback)):
			t.Errorf("CheckAddr(%q, %v) = %v, want a malformed address", tt.addr, tt.login, err)
		case tt.loopback && !errors.Is(err, web.ErrNotLoopback):
			t.Errorf("CheckAddr(%q, %v) = %v, want ErrNotLoopback", tt.addr, tt.login, err)
		case !tt.malformed && !tt.loopback && err != nil:
			t.Errorf("CheckAddr(%q, %v) = %v, want nil", tt.addr, tt.login, err)
		}
	}
}

// Refused requests from someone not logged in are logged once a minute
// for each kind, the rest counted: 30 logins without the form's token
// make one line, and one count at shutdown.
func TestRefusalsAreThrottled(t *testing.T) {
	f := newFixture(t, func(o *web.Options) { o.Token = "correct-horse-battery-staple" })
	b := f.browser()
	for range 30 {
		if r := b.post("/login", url.Values{"token": {"guess"}}); r.status != http.StatusForbidden {
			t.Fatalf("a login without the form's CSRF token: status %d, want 403", r.status)
		}
	}
	const line = `msg="web: login refused: no valid CSRF token"`
	if n := strings.Count(f.logs.String(), line); n != 1 {
		t.Errorf("%d lines during the minute, want 1:\n%s", n, f.logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.logs.String(), line+" repeated=29 within=1m0s") {
		t.Errorf("no count of the other 29:\n%s", f.logs.String())
	}
}
