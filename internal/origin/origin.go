package origin

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Of returns u's origin: "scheme://host:port", lower case, with the
// scheme's default port (80 for http, 443 for https) when u has none.
func Of(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// maxRedirects is how many redirects a request follows, as the standard
// client's default does.
const maxRedirects = 10

// ErrTooManyRedirects is returned (wrapped in a *url.Error) for a request
// redirected more than 10 times.
var ErrTooManyRedirects = errors.New("stopped after 10 redirects")

// credentials are the headers that hold a secret of the first request's
// origin.
var credentials = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// Client returns a copy of c (nil means a zero http.Client) whose
// redirects to an origin other than the first request's go without the
// credential headers, after c's own CheckRedirect, if any, has allowed
// them. It follows at most 10 redirects.
func Client(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	check := out.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return ErrTooManyRedirects
		}
		if check != nil {
			if err := check(req, via); err != nil {
				return err
			}
		}
		if Of(req.URL) != Of(via[0].URL) {
			for _, h := range credentials {
				req.Header.Del(h)
			}
		}
		return nil
	}
	return &out
}

// Loopback reports whether host (a URL's host, without its port) is this
// machine: "localhost", or an address of 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
