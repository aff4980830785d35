package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/usage"
)

// Assistant answers a person's message: *assistant.Assistant, the one the
// WhatsApp messages go to. HandleLocked runs under the sender's lock, held,
// which the caller holds, and always returns a reply to show.
type Assistant interface {
	HandleLocked(ctx, held context.Context, in assistant.Inbound) (assistant.Reply, error)
}

// Person is a family member the admin can chat as.
type Person struct {
	// Key is the person's conversation key: their phone number in E.164
	// form, as WhatsApp's messages from them are kept. It never reaches a
	// URL or a log.
	Key string
	// Name is how the family calls them ("Erin").
	Name string
}

// Guest is whom the admin chats as while the configuration names no
// family: a conversation of its own, kept under a key that is not a phone
// number, so that no WhatsApp message ever joins it.
var Guest = Person{Key: "web-admin", Name: "Admin"}

// Defaults of [Options].
const (
	DefaultMaxUpload = 24 << 20 // a PDF at the assistant's limit, and the form around it
	DefaultUsageDays = 30
)

// Options configure a [Server]. Assistant, Memory and Lists are required;
// the zero value of the others means their defaults.
type Options struct {
	// Assistant answers the messages sent from the page.
	Assistant Assistant
	// Memory is the conversation memory the Assistant keeps.
	Memory *conversation.Memory
	// Lists are the family's lists, which the Assistant's tools edit.
	Lists *lists.Store
	// Locker is the per-sender lock of the WhatsApp server, so that a
	// message from the page and one from WhatsApp for the same person
	// never run at once; nil means a delivery.Local of the page's own.
	Locker delivery.Locker
	// Family are the people the admin can chat as, in the order shown;
	// empty means the configuration names nobody yet, and the admin chats
	// as Guest.
	Family []Person
	// Notes is the family whose long-term notes the page shows and
	// forgets on its members' pages; a zero ID means no notes are shown.
	Notes conversation.Family
	// ConfigPath is the configuration file that would name the family,
	// shown with an example while Family is empty.
	ConfigPath string
	// Token, if set, is the password of the login form; empty means no
	// login, for a page that listens on loopback only (see CheckAddr). It
	// must be at least MinTokenLen characters.
	Token string
	// Prices estimate the cost of the usage, and PricesFrom says where
	// they come from ("the list prices of claude-sonnet-5-5"); zero Prices
	// mean usage.DefaultPrices.
	Prices     usage.Prices
	PricesFrom string
	// SummaryPrices estimate the cost of the running summaries' calls;
	// nil means at Prices.
	SummaryPrices *usage.Prices
	// UsageDays is how many days the usage chart shows, today included;
	// 0 means DefaultUsageDays.
	UsageDays int
	// MaxUpload bounds a posted form, attachment included, in bytes; 0
	// means DefaultMaxUpload.
	MaxUpload int64
	// Logger receives a line per message answered and per refused login;
	// nil means none. Phone numbers are logged masked.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the family's page, an http.Handler. Its Shutdown waits for
// the messages being answered.
type Server struct {
	o       Options
	people  []*person
	byID    map[string]*person
	sess    *sessions
	pages   map[string]*template.Template
	handler http.Handler
	log     *slog.Logger
	now     func() time.Time

	// loginDelay slows every refused login, one at a time, so that the
	// token cannot be guessed fast.
	loginDelay time.Duration
	loginMu    sync.Mutex
	// refused logs the refusals of requests nobody authenticated, once a
	// minute for each kind (logging.Throttle), so that they cannot fill
	// the log.
	refused *logging.Throttle

	// base is the context of the answers in the background; stop ends it
	// when Shutdown runs out of time.
	base    context.Context
	stop    context.CancelFunc
	answers sync.WaitGroup

	mu      sync.Mutex
	threads map[string]*thread // by person key
	closing bool
}

// person is a Person with the id that names them in URLs.
type person struct {
	Person
	ID     string
	Masked string // the key as shown: a masked number
	Guest  bool
}

//go:embed templates static
var files embed.FS

// ErrConfig is wrapped by the errors of [New].
var ErrConfig = errors.New("web: bad options")

// New returns the page for o.
func New(o Options) (*Server, error) {
	switch {
	case o.Assistant == nil:
		return nil, fmt.Errorf("%w: no assistant", ErrConfig)
	case o.Memory == nil:
		return nil, fmt.Errorf("%w: no memory", ErrConfig)
	case o.Lists == nil:
		return nil, fmt.Errorf("%w: no lists", ErrConfig)
	case o.Token != "" && len(o.Token) < MinTokenLen:
		return nil, fmt.Errorf("%w: the token must be at least %d characters", ErrConfig, MinTokenLen)
	case o.UsageDays < 0 || o.MaxUpload < 0:
		return nil, fmt.Errorf("%w: negative usage days or upload limit", ErrConfig)
	}
	if o.Locker == nil {
		o.Locker = &delivery.Local{}
	}
	if o.Prices == (usage.Prices{}) {
		o.Prices = usage.DefaultPrices
		if o.PricesFrom == "" {
			o.PricesFrom = "the list prices of " + usage.DefaultPricesModel
		}
	}
	if o.UsageDays == 0 {
		o.UsageDays = DefaultUsageDays
	}
	if o.MaxUpload == 0 {
		o.MaxUpload = DefaultMaxUpload
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{
		o: o, byID: map[string]*person{}, log: o.Logger, now: o.Now,
		sess: newSessions(o.Token, o.Now), threads: map[string]*thread{},
		loginDelay: time.Second, refused: logging.NewThrottle(o.Logger, time.Minute),
	}
	s.base, s.stop = context.WithCancel(context.Background())
	family := o.Family
	if len(family) == 0 {
		family = []Person{Guest}
	}
	for _, p := range family {
		if err := conversation.CheckPhone(p.Key); err != nil || p.Key == conversation.SystemSender {
			return nil, fmt.Errorf("%w: family member %q: not a conversation key", ErrConfig, p.Name)
		}
		if strings.TrimSpace(p.Name) == "" {
			return nil, fmt.Errorf("%w: family member %s has no name", ErrConfig, phone.Mask(p.Key))
		}
		pp := &person{Person: p, ID: s.uniqueID(slug(p.Name)), Masked: phone.Mask(p.Key), Guest: len(o.Family) == 0}
		s.people = append(s.people, pp)
		s.byID[pp.ID] = pp
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.guard(false, s.home))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.loginPost)
	mux.HandleFunc("POST /logout", s.guard(true, s.logout))
	mux.HandleFunc("GET /people/{id}", s.guard(false, s.personPage))
	mux.HandleFunc("GET /people/{id}/pending", s.guard(false, s.pendingState))
	mux.HandleFunc("POST /people/{id}/messages", s.guard(true, s.send))
	mux.HandleFunc("POST /people/{id}/clear", s.guard(true, s.clear))
	mux.HandleFunc("POST /people/{id}/notes/{note}/forget", s.guard(true, s.forgetNote))
	mux.HandleFunc("POST /people/{id}/summary/delete", s.guard(true, s.deleteSummary))
	mux.HandleFunc("GET /lists", s.guard(false, s.listsPage))
	mux.HandleFunc("POST /lists/items", s.guard(true, s.addItem))
	mux.HandleFunc("POST /lists/items/delete", s.guard(true, s.removeItem))
	mux.HandleFunc("POST /lists/delete", s.guard(true, s.deleteList))
	mux.HandleFunc("GET /usage", s.guard(false, s.usagePage))
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /static/{file}", s.guard(false, func(w http.ResponseWriter, r *http.Request, _ session) {
		w.Header().Set("Cache-Control", "no-cache")
		http.StripPrefix("/static/", http.FileServerFS(static)).ServeHTTP(w, r)
	}))
	mux.HandleFunc("/", s.guard(false, func(w http.ResponseWriter, r *http.Request, sess session) {
		s.fail(w, r, sess, http.StatusNotFound, "There is no such page.")
	}))
	// Browsers say where a request comes from; one from another site is
	// refused before the CSRF token is even looked at.
	s.handler = http.NewCrossOriginProtection().Handler(mux)
	return s, nil
}

// slug makes an id for URLs of a name: lower-case letters and digits,
// other runs of characters as one "-".
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "person"
	}
	return b.String()
}

// uniqueID returns id, or id-2, id-3... when it is taken.
func (s *Server) uniqueID(id string) string {
	if _, taken := s.byID[id]; !taken {
		return id
	}
	for n := 2; ; n++ {
		if c := fmt.Sprintf("%s-%d", id, n); s.byID[c] == nil {
			return c
		}
	}
}

// contentSecurityPolicy allows the page's own style sheet and script and
// nothing else: no inline script or style, no other origin, no frames.
// The login page adds the nonce of its one inline style.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	s.handler.ServeHTTP(w, r)
}

// handlerFunc is a handler that runs within a session.
type handlerFunc func(w http.ResponseWriter, r *http.Request, sess session)

// guard runs h for a request of a logged-in session. Without a login
// every browser gets a session on its first request. A change (change
// set) must carry the session's CSRF token in its "csrf" field; its form,
// at most MaxUpload bytes, is parsed first.
func (s *Server) guard(change bool, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.sess.read(r)
		if !ok && !s.sess.login() {
			sess = s.sess.issue(w, r, true)
		}
		if !sess.authed {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, sess, http.StatusForbidden, "Log in first.")
			return
		}
		if change {
			r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxUpload)
			if err := parseForm(r); err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					s.fail(w, r, sess, http.StatusRequestEntityTooLarge, fmt.Sprintf("That is too large: a message and its file may be %d MB at most.", s.o.MaxUpload>>20))
					return
				}
				s.fail(w, r, sess, http.StatusBadRequest, "The form could not be read.")
				return
			}
			if !s.sess.checkCSRF(r, sess) {
				s.refused.Log(r.Context(), slog.LevelInfo, "web: change refused: no valid CSRF token", "path", r.URL.Path)
				s.fail(w, r, sess, http.StatusForbidden, "This form has expired or did not come from this page. Go back, reload the page and try again.")
				return
			}
		}
		h(w, r, sess)
	}
}

// parseForm parses a posted form, multipart (with a file) or not. Files
// beyond a few megabytes wait on disk, as net/http does.
func parseForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(8 << 20)
	}
	return r.ParseForm()
}

// view is what every page's layout shows.
type view struct {
	Title   string
	CSRF    string
	Logout  bool // a logout button: there is a login
	People  []*person
	Current *person // the person whose page it is, if any
	Nav     string  // "people", "lists" or "usage"
	Pending bool    // a reply is awaited: the page reloads itself
	Nonce   string  // of the login page's inline style
	Style   template.CSS
	Page    any // the page's own data
}

// newView returns the layout's data for sess.
func (s *Server) newView(sess session, title, nav string, page any) *view {
	return &view{Title: title, CSRF: s.sess.csrf(sess), Logout: s.sess.login() && sess.authed, People: s.people, Nav: nav, Page: page}
}

// render writes the page name with v, at status.
func (s *Server) render(w http.ResponseWriter, status int, name string, v *view) {
	t := s.pages[name]
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		s.log.Error("web: rendering a page", "page", name, "err", err)
		http.Error(w, "The page could not be shown; the log has the detail.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail shows a short message as the page, at status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, sess session, status int, msg string) {
	v := s.newView(sess, http.StatusText(status), "", struct {
		Message string
		Back    string
	}{msg, backLink(r)})
	if !sess.authed {
		v.People = nil
	}
	s.render(w, status, "error.html", v)
}

// backLink is where the error page's link goes: the page a form was on.
func backLink(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/people/"):
		parts := strings.Split(p, "/")
		if len(parts) >= 3 {
			return "/people/" + parts[2]
		}
	case strings.HasPrefix(p, "/lists"):
		return "/lists"
	case p == "/login":
		return "/login"
	}
	return "/"
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"dollars":   dollars,
	"percent":   pct,
	"thousands": thousands,
	"anchor":    listAnchor,
	"add":       func(a, b int64) int64 { return a + b },
}

// thousands writes n with thin separators: 12,345.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimPrefix(n, "templates/")
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(files, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", base, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// home shows the family, or how to name it.
func (s *Server) home(w http.ResponseWriter, r *http.Request, sess session) {
	v := s.newView(sess, "mombot", "people", struct {
		Guest      bool
		ConfigPath string
	}{len(s.o.Family) == 0, s.o.ConfigPath})
	s.render(w, http.StatusOK, "home.html", v)
}

// staticFile returns an embedded static file, for the login page's style.
func staticFile(name string) string {
	f, err := files.Open("static/" + name)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	return string(b)
}
