package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
)

// exchange is a message sent from the page whose reply is awaited.
type exchange struct {
	Text       string
	Attachment string // the file's name, if one was attached
	At         time.Time
}

// notice is the outcome of a message that the conversation does not show
// by itself: a reply that was not kept (a kind apology, a refused file),
// and the message too when it was not kept either.
type notice struct {
	Text       string // the person's message, when it was not kept
	Attachment string
	Reply      string
}

// thread is what the page knows of a person's chat besides their stored
// conversation: the messages being answered, and the last notice.
type thread struct {
	pending []*exchange
	notice  *notice
}

// threadOf returns p's thread. s.mu is held.
func (s *Server) threadOf(key string) *thread {
	t := s.threads[key]
	if t == nil {
		t = &thread{}
		s.threads[key] = t
	}
	return t
}

// person returns the person the request's {id} names, or nil.
func (s *Server) person(r *http.Request) *person { return s.byID[r.PathValue("id")] }

// personData is the person page's own data.
type personData struct {
	Person     *person
	Turns      []turnView
	LastActive string
	ForgetAt   string
	Timeout    string
	MaxTurns   int
	Problem    string // the memory could not be read
	Pending    []*exchange
	Notice     *notice
	Usage      *personUsage // nil when the ledger could not be read
	Guest      bool
	ConfigPath string
	Memory     longTerm
}

// personPage shows a person's conversation as a chat thread, with the
// form to write as them.
func (s *Server) personPage(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
		return
	}
	lim := s.o.Memory.Limits()
	d := &personData{Person: p, Timeout: duration(lim.Timeout), MaxTurns: lim.MaxTurns, Guest: p.Guest, ConfigPath: s.o.ConfigPath}
	// Current, not Peek: the page shows what the next message will be
	// answered with, and an expired conversation is gone, as it would be
	// for that message.
	c, err := s.o.Memory.Current(r.Context(), p.Key)
	if err != nil {
		s.log.Error("web: reading a conversation", "person", p.Name, "err", err)
		d.Problem = "The conversation could not be read just now; the log has the detail."
	} else {
		d.Turns = transcript(c)
		if !c.LastActive.IsZero() {
			d.LastActive = c.LastActive.Local().Format("Mon 2 Jan 15:04")
			d.ForgetAt = c.LastActive.Add(lim.Timeout).Local().Format("15:04")
		}
	}
	d.Memory = s.longTermOf(r.Context(), p)
	if u, err := s.usageOf(r.Context(), p); err == nil {
		d.Usage = u
	} else {
		s.log.Warn("web: reading the usage ledger", "err", err)
	}
	s.mu.Lock()
	if t := s.threads[p.Key]; t != nil {
		d.Pending = slices.Clone(t.pending)
		d.Notice = t.notice
	}
	s.mu.Unlock()
	v := s.newView(sess, p.Name, "people", d)
	v.Current = p
	v.Pending = len(d.Pending) > 0
	s.render(w, http.StatusOK, "person.html", v)
}

// duration writes a timeout for people: "30 minutes", "2 hours".
func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return plural(int(d/time.Minute), "minute")
	}
	return d.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// pendingState tells the page's script whether a reply is awaited.
func (s *Server) pendingState(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	n := 0
	if t := s.threads[p.Key]; t != nil {
		n = len(t.pending)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"pending":%t}`, n > 0)
}

// send takes a message for a person and has it answered in the
// background; the browser is sent back to the thread, which shows it
// pending until the reply is in.
func (s *Server) send(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
		return
	}
	text := strings.TrimRight(strings.ReplaceAll(r.PostForm.Get("message"), "\r\n", "\n"), " \t\n")
	in := assistant.Inbound{From: p.Key, Text: text, Time: s.now()}
	name, err := attach(&in, r)
	if err != nil {
		s.fail(w, r, sess, http.StatusBadRequest, "The file could not be read: "+err.Error())
		return
	}
	thread := "/people/" + p.ID
	if strings.TrimSpace(text) == "" && name == "" {
		http.Redirect(w, r, thread, http.StatusSeeOther)
		return
	}
	ex := &exchange{Text: text, Attachment: name, At: in.Time}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.fail(w, r, sess, http.StatusServiceUnavailable, "mombot is stopping; send it again once it is back.")
		return
	}
	t := s.threadOf(p.Key)
	t.pending = append(t.pending, ex)
	t.notice = nil
	s.answers.Add(1)
	s.mu.Unlock()
	go s.answer(p, ex, in)
	http.Redirect(w, r, thread, http.StatusSeeOther)
}

// answer has in answered and puts the outcome in p's thread.
func (s *Server) answer(p *person, ex *exchange, in assistant.Inbound) {
	defer s.answers.Done()
	start := time.Now()
	reply, err := s.handle(p, in)
	s.mu.Lock()
	t := s.threadOf(p.Key)
	t.pending = slices.DeleteFunc(t.pending, func(e *exchange) bool { return e == ex })
	if err != nil || !reply.Stored {
		n := &notice{Reply: reply.Text}
		if !reply.Stored {
			n.Text, n.Attachment = ex.Text, ex.Attachment
		}
		t.notice = n
	}
	s.mu.Unlock()
	// Handle has logged the detail of a failure.
	s.log.Info("web: message answered", "person", p.Name, "stored", reply.Stored, "failed", err != nil, "duration", time.Since(start).Round(time.Millisecond).String())
}

// handle answers in under the sender's lock, which it hands to the
// assistant so that it does not take it again.
func (s *Server) handle(p *person, in assistant.Inbound) (assistant.Reply, error) {
	held, unlock, err := s.o.Locker.Lock(s.base, p.Key)
	if err != nil {
		err = fmt.Errorf("web: waiting for %s's previous message: %w", p.Name, err)
		return assistant.Reply{Text: assistant.ErrorMessage(err)}, err
	}
	defer unlock()
	return s.o.Assistant.HandleLocked(s.base, held, in)
}

// attach reads the form's "attachment" file, if any, into in: a picture
// as an image, an OGG as a voice note, anything else as a document, which
// the assistant takes if it is a PDF or plain text and otherwise answers
// with what works. It returns the file's name.
func attach(in *assistant.Inbound, r *http.Request) (string, error) {
	if r.MultipartForm == nil || len(r.MultipartForm.File["attachment"]) == 0 {
		return "", nil
	}
	fh := r.MultipartForm.File["attachment"][0]
	if fh.Size == 0 && fh.Filename == "" {
		return "", nil // the file input, left empty
	}
	data, err := readFile(fh)
	if err != nil {
		return "", err
	}
	name := filepath.Base(strings.ReplaceAll(fh.Filename, "\\", "/"))
	declared := fh.Header.Get("Content-Type")
	if declared == "" || declared == "application/octet-stream" {
		declared = mime.TypeByExtension(strings.ToLower(filepath.Ext(name)))
	}
	sniffed := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(sniffed, "image/") || strings.HasPrefix(declared, "image/"):
		in.Image, in.ImageType = data, declared
	case sniffed == "application/ogg" || strings.HasPrefix(declared, "audio/"):
		in.Voice = data
	default:
		in.Document = &assistant.Document{Data: data, MediaType: declared, Filename: name}
	}
	return name, nil
}

func readFile(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// clear forgets a person's conversation, under their lock so that it
// does not fall in the middle of a message being answered.
func (s *Server) clear(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
		return
	}
	_, unlock, err := s.o.Locker.Lock(r.Context(), p.Key)
	if err != nil {
		s.fail(w, r, sess, http.StatusServiceUnavailable, "A message is being answered; try again in a moment.")
		return
	}
	err = s.o.Memory.Clear(r.Context(), p.Key)
	unlock()
	if err != nil && !errors.Is(err, conversation.ErrNotFound) {
		s.log.Error("web: clearing a conversation", "person", p.Name, "err", err)
		s.fail(w, r, sess, http.StatusInternalServerError, "The conversation could not be cleared; the log has the detail.")
		return
	}
	s.mu.Lock()
	s.threadOf(p.Key).notice = nil
	s.mu.Unlock()
	s.log.Info("web: conversation cleared", "person", p.Name)
	http.Redirect(w, r, "/people/"+p.ID, http.StatusSeeOther)
}

// Shutdown stops taking messages and waits for those being answered until
// ctx is done; then it cancels them, waits for them to stop, and returns
// ctx's error. Call it after the http.Server's Shutdown, and before
// closing what the assistant uses.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.refused.Close()
	done := make(chan struct{})
	go func() { s.answers.Wait(); close(done) }()
	select {
	case <-done:
		s.stop()
		return nil
	case <-ctx.Done():
		s.stop()
		<-done
		return fmt.Errorf("web: shutdown: %w", ctx.Err())
	}
}
