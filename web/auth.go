package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SessionLife is how long a session lasts once issued.
const SessionLife = 30 * 24 * time.Hour

// MinTokenLen is the shortest token [New] accepts: one a person could
// guess at one try a second is no lock.
const MinTokenLen = 16

// sessionCookie is the cookie of the session.
const sessionCookie = "mombot_session"

// session is one browser's session: a random id, bound to the server's
// key, and whether the browser has logged in. Without a token every
// session is logged in.
type session struct {
	id      string
	expires time.Time
	authed  bool
}

// sessions issues and checks sessions and their CSRF tokens. A session is
// a cookie signed with key, so that it holds no state on the server and
// outlives a restart when key does (it is derived from the token).
type sessions struct {
	key   []byte
	token []byte // SHA-256 of the token; nil: no login
	now   func() time.Time
}

// newSessions returns the sessions for token; without one the key is
// random, so sessions last as long as the process (a page loaded before a
// restart asks to be reloaded).
func newSessions(token string, now func() time.Time) *sessions {
	s := &sessions{now: now}
	if token == "" {
		s.key = make([]byte, 32)
		rand.Read(s.key)
		return s
	}
	sum := sha256.Sum256([]byte(token))
	s.token = sum[:]
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("mombot web session key"))
	s.key = mac.Sum(nil)
	return s
}

// login reports whether a login is needed.
func (s *sessions) login() bool { return s.token != nil }

// checkToken reports whether typed is the token, in constant time: the
// hashes are compared, so that not even the length leaks.
func (s *sessions) checkToken(typed string) bool {
	sum := sha256.Sum256([]byte(typed))
	return s.token != nil && subtle.ConstantTimeCompare(sum[:], s.token) == 1
}

func (s *sessions) sign(parts ...string) string {
	mac := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		mac.Write([]byte(p))
		mac.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// read returns the request's session, if it carries a valid one.
func (s *sessions) read(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	f := strings.Split(c.Value, ".")
	if len(f) != 4 || (f[2] != "0" && f[2] != "1") {
		return session{}, false
	}
	if !hmac.Equal([]byte(f[3]), []byte(s.sign("session", f[0], f[1], f[2]))) {
		return session{}, false
	}
	exp, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || !s.now().Before(time.Unix(exp, 0)) {
		return session{}, false
	}
	sess := session{id: f[0], expires: time.Unix(exp, 0), authed: f[2] == "1"}
	if !s.login() {
		sess.authed = true
	}
	return sess, true
}

// issue starts a new session, logged in or not, and sets its cookie on w.
// A new id at each login keeps a session id planted before it useless.
func (s *sessions) issue(w http.ResponseWriter, r *http.Request, authed bool) session {
	id := make([]byte, 18)
	rand.Read(id)
	sess := session{id: base64.RawURLEncoding.EncodeToString(id), expires: s.now().Add(SessionLife).Truncate(time.Second), authed: authed || !s.login()}
	flag := "0"
	if sess.authed {
		flag = "1"
	}
	exp := strconv.FormatInt(sess.expires.Unix(), 10)
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    strings.Join([]string{sess.id, exp, flag, s.sign("session", sess.id, exp, flag)}, "."),
		Path:     "/",
		Expires:  sess.expires,
		MaxAge:   int(SessionLife / time.Second),
		HttpOnly: true,
		Secure:   overHTTPS(r),
		SameSite: http.SameSiteStrictMode,
	})
	return sess
}

// overHTTPS reports whether the browser reached the page over HTTPS: its
// own TLS, or a reverse proxy's that says so. A client that claims it
// falsely only gets a cookie its browser will not send back over HTTP.
func overHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// end removes the session cookie.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: overHTTPS(r), SameSite: http.SameSiteStrictMode})
}

// csrf returns the CSRF token of sess: forms carry it in a hidden field
// named "csrf", and a change is made only when it matches the session's.
func (s *sessions) csrf(sess session) string { return s.sign("csrf", sess.id) }

// checkCSRF reports whether the request's "csrf" field is sess's token.
// The form must have been parsed.
func (s *sessions) checkCSRF(r *http.Request, sess session) bool {
	got := r.PostForm.Get("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf(sess)))
}
