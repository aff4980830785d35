package web

import (
	"crypto/rand"
	"encoding/hex"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// loginPage shows the login form. The request gets a session that is not
// logged in, so that the form carries a CSRF token as every other form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.showLogin(w, r, http.StatusOK, "")
}

func (s *Server) showLogin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	if !s.sess.login() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	sess, ok := s.sess.read(r)
	if !ok {
		sess = s.sess.issue(w, r, false)
	}
	if sess.authed && problem == "" {
		http.Redirect(w, r, localPath(r.FormValue("next")), http.StatusSeeOther)
		return
	}
	// The login page's style is inline, with a nonce: the style sheet
	// under /static/, like every other path, needs the login.
	nonce := make([]byte, 16)
	rand.Read(nonce)
	v := s.newView(sess, "Log in", "", struct {
		Next, Problem string
	}{localPath(r.FormValue("next")), problem})
	v.People = nil
	v.Nonce = hex.EncodeToString(nonce)
	v.Style = template.CSS(staticFile("style.css"))
	w.Header().Set("Content-Security-Policy", strings.Replace(contentSecurityPolicy, "style-src 'self'", "style-src 'nonce-"+v.Nonce+"'", 1))
	s.render(w, status, "login.html", v)
}

// loginPost checks the token typed and, when it is right, starts a
// logged-in session.
func (s *Server) loginPost(w http.ResponseWriter, r *http.Request) {
	if !s.sess.login() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	sess, ok := s.sess.read(r)
	if err := r.ParseForm(); err != nil || !ok || !s.sess.checkCSRF(r, sess) {
		s.refused.Log(r.Context(), slog.LevelInfo, "web: login refused: no valid CSRF token")
		s.fail(w, r, session{}, http.StatusForbidden, "This form has expired. Go back, reload the page and try again.")
		return
	}
	if !s.sess.checkToken(r.PostForm.Get("token")) {
		// One refused login at a time, each slowed down: guessing a
		// token of MinTokenLen characters at that pace takes for ever.
		s.loginMu.Lock()
		sleep(r, s.loginDelay)
		s.loginMu.Unlock()
		s.refused.Log(r.Context(), slog.LevelWarn, "web: login refused: wrong token", "remote", r.RemoteAddr)
		s.showLogin(w, r, http.StatusUnauthorized, "That is not the token. It is the value of MOMBOT_WEB_TOKEN where mombot serve runs.")
		return
	}
	s.sess.issue(w, r, true)
	s.log.Info("web: logged in", "remote", r.RemoteAddr)
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

// logout ends the session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ session) {
	s.sess.end(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath returns next if it is a path on this server, and "/"
// otherwise, so that the login cannot send the browser elsewhere.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}

// sleep waits d, or until the request is gone.
func sleep(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}
