package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/internal/ptytest"
)

// askEnv runs mombot ask and chat in-process against a fake Messages API,
// with the conversations and lists in a temporary folder.
type askEnv struct {
	t     *testing.T
	srv   *anthropictest.Server
	dir   string
	vars  map[string]string
	stdin string
}

func newAskEnv(t *testing.T) *askEnv {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mombot.json")
	if err := os.WriteFile(cfg, []byte(`{"timezone":"America/Los_Angeles","family":{"+14155551234":{"name":"Erin"},"+14155555678":{"name":"Jason"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := anthropictest.NewServer(t)
	t.Cleanup(func() {
		for _, r := range srv.Rejected() {
			t.Errorf("the fake API rejected a request: %s", r)
		}
	})
	return &askEnv{t: t, srv: srv, dir: dir, vars: map[string]string{
		"ANTHROPIC_API_KEY":  anthropictest.APIKey,
		"ANTHROPIC_BASE_URL": srv.URL,
		"MOMBOT_CONFIG":      cfg,
		"MOMBOT_STORE":       filepath.Join(dir, "conversations.json"),
	}}
}

func (a *askEnv) run(args ...string) (string, string, error) {
	a.t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"mombot"}, args...), func(k string) string { return a.vars[k] }, strings.NewReader(a.stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func (a *askEnv) lastMessages() int {
	reqs := a.srv.Requests()
	return len(reqs[len(reqs)-1].Params.Messages)
}

func TestAskFollowUpAndIsolation(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Tacos."), anthropictest.Text("Corn tortillas."), anthropictest.Text("Hi Jason."))
	out, _, err := a.run("ask", "--from", "+14155551234", "what's for dinner?")
	if err != nil || out != "Tacos.\n" {
		t.Fatalf("ask: %q, %v", out, err)
	}
	if _, _, err := a.run("ask", "--from", "+14155551234", "what kind of tortillas?"); err != nil {
		t.Fatal(err)
	}
	if n := a.lastMessages(); n != 3 {
		t.Errorf("the follow-up sent %d messages, want 3", n)
	}
	if _, _, err := a.run("ask", "--from", "+14155555678", "hello"); err != nil {
		t.Fatal(err)
	}
	if n := a.lastMessages(); n != 1 {
		t.Errorf("Jason's message carried %d messages", n)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "conversations.json")); err != nil {
		t.Errorf("no conversations file: %v", err)
	}
}

// TestAskListsWorkflow checks the lists through ask: a lists.json of an
// earlier release is imported at start and renamed, the tools change the
// lists in the store, and mombot lists shows them.
func TestAskListsWorkflow(t *testing.T) {
	a := newAskEnv(t)
	file := filepath.Join(a.dir, "lists.json")
	if err := os.WriteFile(file, []byte(`{"lists":{"grocery":[{"text":"bread","added_by":"Jason","added_at":"2026-02-24T10:35:00Z"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a.srv.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"list": "grocery", "items": []string{"limes", "cilantro"}}}),
		anthropictest.Text("Added."),
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_remove", Input: map[string]any{"list": "grocery", "positions": []int{3}}}),
		anthropictest.Text("Removed cilantro."),
	)
	if _, _, err := a.run("ask", "--from", "+14155551234", "add limes and cilantro to the grocery list"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file + ".imported"); err != nil {
		t.Errorf("lists.json was not renamed once imported: %v", err)
	}
	out, _, err := a.run("ask", "--from", "+14155551234", "remove the third one")
	if err != nil || out != "Removed cilantro.\n" {
		t.Fatalf("%q, %v", out, err)
	}
	// The second message carried the first turn's tool_use/tool_result pair.
	if n := a.lastMessages(); n != 7 {
		t.Errorf("sent %d messages, want 7", n)
	}
	// The list has bread and limes; cilantro is kept among the removed
	// items, to be put back with list_restore.
	out, _, err = a.run("lists", "--json")
	var f struct {
		Lists   map[string][]lists.Item
		Removed []lists.Removed
	}
	if err != nil || json.Unmarshal([]byte(out), &f) != nil || len(f.Lists["grocery"]) != 2 || f.Lists["grocery"][0].Text != "bread" || f.Lists["grocery"][1].Text != "limes" ||
		len(f.Removed) != 1 || f.Removed[0].Text != "cilantro" || f.Removed[0].RemovedBy != "Erin" {
		t.Errorf("lists --json = %s, %v", out, err)
	}
	out, _, err = a.run("lists")
	if want := "grocery (2)\n  1. bread (Jason)\n  2. limes (Erin)\n"; err != nil || !strings.HasPrefix(out, want) || !strings.Contains(out, "grocery: cilantro (removed by Erin") {
		t.Errorf("lists = %q, %v; want it to start %q and name the removed cilantro", out, err, want)
	}
}

func TestAskErrors(t *testing.T) {
	a := newAskEnv(t)
	delete(a.vars, "ANTHROPIC_API_KEY")
	if _, _, err := a.run("ask", "--from", "+14155551234", "hi"); err == nil || err.Error() != "ANTHROPIC_API_KEY is not set" {
		t.Errorf("without a key: %v", err)
	}
	a = newAskEnv(t)
	if _, _, err := a.run("ask", "hi"); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("without --from: %v", err)
	}
	// The client retries twice, as it does in production.
	busy := anthropictest.Overloaded()
	busy.Header = http.Header{"Retry-After-Ms": {"1"}}
	a.srv.Enqueue(busy, busy, busy)
	out, stderr, err := a.run("ask", "--from", "+14155551234", "hi")
	if err == nil || !strings.HasPrefix(out, "Sorry") {
		t.Errorf("API failure: %q, %v", out, err)
	}
	// The log has the detail once; main adds a short line, not the API
	// error again, and exits 1.
	var exit bytes.Buffer
	if code := exitCode(err, &exit); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	stderr += exit.String()
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "req_fake_") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d lines of stderr report the API error, want 1:\n%s", n, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(exit.String()), "\n"); len(lines) != 1 || len(lines[0]) > 100 || strings.Contains(lines[0], "529") {
		t.Errorf("main reports %q, want one short line without the API error", exit.String())
	}
}

func TestChat(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Hello Erin."), anthropictest.Text("Still here."), anthropictest.Text("Fresh start."))
	a.stdin = "hi\nare you there?\n/history\n/clear\nhello again\n"
	out, _, err := a.run("chat", "--from", "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Hello Erin.", "Still here.", "are you there?", "(conversation forgotten)", "Fresh start."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := a.lastMessages(); n != 1 {
		t.Errorf("after /clear the message carried %d messages", n)
	}
}

// TestChatOffATerminal replays the first hour's chat through a pipe: it
// printed the greeting and "> " prompts among the replies, and ended
// without a newline after /quit. Off a terminal the output is the replies
// alone, each on its line, and /history gives the last activity in the
// family's time zone (America/Los_Angeles here), not the machine's UTC.
func TestChatOffATerminal(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Hello Erin."))
	a.stdin = "hi\n/quit\n"
	out, _, err := a.run("chat", "--from", "Erin")
	if err != nil || out != "Hello Erin.\n" {
		t.Errorf("chat through a pipe printed %q, %v; want the reply alone, ending with a newline", out, err)
	}
	a.stdin = "/history\n"
	out, _, err = a.run("chat", "--from", "Erin")
	if err != nil || !regexp.MustCompile(`^Conversation with \+14155551234: 1 turn, last active \d{4}-\d\d-\d\d \d\d:\d\d:\d\d P[SD]T \(active\)\n`).MatchString(out) {
		t.Errorf("/history printed %q, %v; want the last activity in Pacific time", out, err)
	}
}

// TestChatOnATerminal: at a terminal, chat greets the person by the name
// mombot.json gives them (it said "Chatting as +*******1234."), and
// prompts for each line.
func TestChatOnATerminal(t *testing.T) {
	a := newAskEnv(t)
	control, tty := ptytest.Open(t)
	a.srv.Enqueue(anthropictest.Text("Hello Erin."))
	if _, err := io.WriteString(control, "hi\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"mombot", "chat", "--from", "+14155551234"}, func(k string) string { return a.vars[k] }, tty, &stdout, &stderr)
	if want := "Chatting as Erin (+*******1234). /history, /clear, /quit, /help.\n> Hello Erin.\n> "; err != nil || stdout.String() != want {
		t.Errorf("chat on a terminal printed %q, %v; want %q", stdout.String(), err, want)
	}
}

// chat answers /help itself and refuses a mistyped /command with a
// suggestion, sending neither to Claude; a path-like line, or one escaped
// with //, is a message.
func TestChatCommands(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("It is a file."), anthropictest.Text("A slash."))
	a.stdin = "/help\n/hsitory\n/etc/hosts, what is it?\n//slash\n"
	out, _, err := a.run("chat", "--from", "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/history   show this conversation", `unknown command /hsitory (did you mean "/history"?)`, "It is a file.", "A slash."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	reqs := a.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: /help and /hsitory must not reach Claude", len(reqs))
	}
	if last := string(reqs[1].Params.Messages[len(reqs[1].Params.Messages)-1]); !strings.Contains(last, "]: /slash") {
		t.Errorf("//slash sent %s, want the message /slash", last)
	}
}

// ANTHROPIC_BASE_URL without a scheme was reported to the person as "I
// can't reach my brain right now"; it is a usage error at start, for ask
// and for serve, that says how to write it, and nothing reaches the store.
func TestAnthropicBaseURLWithoutScheme(t *testing.T) {
	a := newAskEnv(t)
	for _, tt := range []struct{ url, want string }{
		{"127.0.0.1:47311", "ANTHROPIC_BASE_URL=127.0.0.1:47311 has no scheme; write the whole URL, like https://127.0.0.1:47311 (or http:// for a local endpoint)"},
		{"localhost", "ANTHROPIC_BASE_URL=localhost has no scheme"},
		{"ftp://example.com", "ANTHROPIC_BASE_URL=ftp://example.com is not an http or https URL"},
		{"https://user:s3cret@", "ANTHROPIC_BASE_URL=...@ is not an http or https URL"},
	} {
		a.vars["ANTHROPIC_BASE_URL"] = tt.url
		out, _, err := a.run("ask", "--from", "Erin", "hi")
		var u cli.UsageError
		if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), tt.want) || out != "" {
			t.Errorf("ANTHROPIC_BASE_URL=%s: printed %q, %v; want only the usage error %q", tt.url, out, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.dir, "conversations.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a conversation was stored: %v", err)
	}
	vars := serveVars(t)
	vars["ANTHROPIC_BASE_URL"] = "127.0.0.1:47311"
	vars["MOMBOT_STORE"] = filepath.Join(a.dir, "served.json")
	_, errOut, code := runCmd(t, vars, "serve", "--listen", "127.0.0.1:0", "--insecure-skip-signature")
	if code != 2 || !strings.Contains(errOut, "ANTHROPIC_BASE_URL=127.0.0.1:47311 has no scheme") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("serve: exit %d, stderr %q; want exit 2 and the one-line error", code, errOut)
	}
}

// Flags may follow the message, as in history.
func TestAskFlagsAfterMessage(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Tacos."))
	out, _, err := a.run("ask", "what's", "for", "dinner?", "--from", "+14155551234")
	if err != nil || out != "Tacos.\n" {
		t.Fatalf("ask MESSAGE --from: %q, %v", out, err)
	}
	if last := string(a.srv.Requests()[0].Params.Messages[0]); !strings.Contains(last, "what's for dinner?") {
		t.Errorf("sent %s", last)
	}
}

// --from is read as the family's numbers are, so every way of writing
// Erin's number with its country code, and her name, reach her
// conversation and her name.
func TestAskFromNormalised(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Tacos."), anthropictest.Text("Corn ones."), anthropictest.Text("Flan."))
	for i, from := range []string{"+1 (415) 555-1234", "erin", "+1 415.555.1234"} {
		if _, _, err := a.run("ask", "--from", from, fmt.Sprintf("message %d", i)); err != nil {
			t.Fatalf("--from %q: %v", from, err)
		}
		msgs := a.srv.Requests()[i].Params.Messages
		if len(msgs) != 2*i+1 {
			t.Errorf("--from %q sent %d messages, want %d: it did not continue Erin's conversation", from, len(msgs), 2*i+1)
		}
		if last := string(msgs[len(msgs)-1]); !strings.Contains(last, fmt.Sprintf("[From Erin]: message %d", i)) {
			t.Errorf("--from %q sent %s, want Erin named", from, last)
		}
	}
	a.stdin = "hi\n"
	a.srv.Enqueue(anthropictest.Text("Hi Erin."))
	if out, _, err := a.run("chat", "--from", "+1-415-555-1234"); err != nil || !strings.Contains(out, "Hi Erin.") {
		t.Fatalf("chat: %q, %v", out, err)
	}
	if n := a.lastMessages(); n != 7 {
		t.Errorf("chat sent %d messages, want 7: it did not continue Erin's conversation", n)
	}

	// history finds the conversation however the number is written, and
	// clears it so.
	for _, number := range []string{"14155551234", "+1 (415) 555-1234", "+14155551234"} {
		if out, _, err := a.run("history", "show", number); err != nil || !strings.Contains(out, "message 2") {
			t.Errorf("history show %s: %q, %v; want Erin's conversation", number, out, err)
		}
	}
	if out, _, err := a.run("history", "clear", "1 415 555 1234"); err != nil || !strings.Contains(out, "cleared") {
		t.Errorf("history clear: %q, %v", out, err)
	}
	if _, _, err := a.run("history", "show", "+14155551234"); err == nil {
		t.Error("the conversation is still there after history clear")
	}

	for _, from := range []string{"", "erinn", "+", "()", "+1 415 555 1234 ext 5", "+1 555 123", "+0 415 555 1234", "14155551234"} {
		_, _, err := a.run("ask", "--from", from, "hi")
		var u cli.UsageError
		if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), "ask: --from") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--from %q: %v, want a one-line usage error about --from", from, err)
		}
	}
}

// TestAskFromIsReadAsTheConfigReadsNumbers replays the first hour's
// surprises with --from: a number without its country code was read as
// starting with one (4155551234 as +41 55 555 1234, Switzerland) although
// mombot.json refuses it, and no --from at all was "not a phone number:
// fewer than 8 digits". Nothing reaches Claude or the store for either.
func TestAskFromIsReadAsTheConfigReadsNumbers(t *testing.T) {
	a := newAskEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ask", "--from", "4155551234", "hi"}, "ask: --from 4155551234: no country code; write the number in international form, as mombot.json does, like +14155551234; did you mean +14155551234 (Erin)?"},
		{[]string{"ask", "--from", "(415) 555-5678", "hi"}, "did you mean +14155555678 (Jason)?"},
		{[]string{"ask", "hi"}, "ask: --from is needed: who is writing? Give a phone number, like --from +14155551234, or a name from mombot.json: Erin, Jason"},
		{[]string{"chat"}, "chat: --from is needed"},
		{[]string{"ask", "--from", "Ern", "hi"}, `ask: --from "Ern" is neither a phone number nor a name in mombot.json (Erin, Jason)`},
	} {
		_, _, err := a.run(tt.args...)
		var u cli.UsageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("mombot %s: %v\nwant a usage error with %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
	if n := len(a.srv.Requests()); n != 0 {
		t.Errorf("%d requests reached Claude", n)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "conversations.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a conversation was stored: %v", err)
	}

	// A family of one needs no --from.
	one := filepath.Join(a.dir, "one.json")
	if err := os.WriteFile(one, []byte(`{"family":{"+14155551234":{"name":"Erin"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a.vars["MOMBOT_CONFIG"] = one
	a.srv.Enqueue(anthropictest.Text("Hi Erin."))
	if out, _, err := a.run("ask", "hi"); err != nil || out != "Hi Erin.\n" {
		t.Fatalf("ask without --from in a family of one: %q, %v", out, err)
	}
	if last := string(a.srv.Requests()[0].Params.Messages[0]); !strings.Contains(last, "[From Erin]: hi") {
		t.Errorf("sent %s, want it from Erin", last)
	}
}

// ask --image sends the picture as a base64 image block and stores the
// placeholder; a file that is not a supported picture is refused with a
// reply that says what to send instead, and nothing is sent or stored.
func TestAskImage(t *testing.T) {
	a := newAskEnv(t)
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	var pic bytes.Buffer
	if err := png.Encode(&pic, img); err != nil {
		t.Fatal(err)
	}
	photo := filepath.Join(a.dir, "fridge.jpg") // named .jpg, a PNG inside
	if err := os.WriteFile(photo, pic.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	a.srv.Enqueue(anthropictest.Text("An empty fridge."))
	out, _, err := a.run("ask", "--from", "+14155551234", "--image", photo, "what can I cook?")
	if err != nil || out != "An empty fridge.\n" {
		t.Fatalf("ask --image: %q, %v", out, err)
	}
	var sent []struct {
		Type   string
		Source struct {
			Type      string
			MediaType string `json:"media_type"`
			Data      string
		}
		Text string
	}
	msgs := a.srv.Requests()[0].Params.Messages
	var m struct{ Content json.RawMessage }
	if err := json.Unmarshal(msgs[0], &m); err != nil || json.Unmarshal(m.Content, &sent) != nil || len(sent) != 2 {
		t.Fatalf("sent %s", msgs[0])
	}
	if sent[0].Type != "image" || sent[0].Source.Type != "base64" || sent[0].Source.MediaType != "image/png" || sent[0].Source.Data != base64.StdEncoding.EncodeToString(pic.Bytes()) {
		t.Errorf("the image block sent is %+v, want the file in base64", sent[0])
	}
	if !strings.HasSuffix(sent[1].Text, "[From Erin]: what can I cook?") {
		t.Errorf("the text block sent is %q", sent[1].Text)
	}
	stored, err := os.ReadFile(filepath.Join(a.dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored), conversation.ImagePlaceholder) || strings.Contains(string(stored), sent[0].Source.Data) {
		t.Errorf("stored %s, want the placeholder and not the picture", stored)
	}

	a = newAskEnv(t)
	notes := filepath.Join(a.dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("milk, eggs, flour\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = a.run("ask", "--from", "+14155551234", "--image", notes, "what is this?")
	if out != assistant.ReplyImageType+"\n" || !errors.Is(err, errAskRefused) {
		t.Errorf("ask --image notes.txt: %q, %v; want %q and a refusal", out, err, assistant.ReplyImageType)
	}
	if n := len(a.srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent for a refused file", n)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "conversations.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused file left a conversations file (%v)", err)
	}
}
