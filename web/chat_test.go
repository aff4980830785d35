package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/web"
)

// TestChatRemembers checks the chat: a message sent as Erin is answered
// by the assistant with her memory, the thread shows the reply and the
// tool calls with their results plainly, and the second message carries
// the first to the model.
func TestChatRemembers(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	f.claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"list": "grocery", "items": []string{"oat milk"}}}),
		anthropictest.Text("Added oat milk to the grocery list."),
		anthropictest.Text("You asked for oat milk."),
	)
	page := b.send("erin", "Put oat milk on the grocery list")
	for _, want := range []string{
		"Put oat milk on the grocery list", // her message, without the header the model gets
		"Tool call <code>list_add</code>",  // the call, its input and its result, plainly
		html.EscapeString(`"oat milk"`),
		"Added. The grocery list (1):",
		"Added oat milk to the grocery list.",
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("Erin's thread lacks %q:\n%s", want, page.body)
		}
	}
	if strings.Contains(page.body, "[From Erin]") {
		t.Errorf("the thread shows the header the model reads:\n%s", page.body)
	}

	page = b.send("erin", "What did I ask for?")
	if !strings.Contains(page.body, "You asked for oat milk.") {
		t.Errorf("the second reply is not shown:\n%s", page.body)
	}
	got := f.userTexts(2)
	if len(got) < 3 || !strings.Contains(got[0], "Put oat milk on the grocery list") || !strings.Contains(got[len(got)-1], "What did I ask for?") {
		t.Errorf("the second message's request carries user messages %q, want the first message, its tool result and the second", got)
	}

	// The lists page shows what the assistant's tool added.
	if r := b.get("/lists"); !strings.Contains(r.body, "oat milk") {
		t.Errorf("the lists page lacks the item the assistant added:\n%s", r.body)
	}
	// Jason's conversation is his own.
	if r := b.get("/people/jason"); strings.Contains(r.body, "oat milk") {
		t.Errorf("Jason's thread shows Erin's conversation:\n%s", r.body)
	}
}

// TestReplyEscaped checks that what the model says, what people write and
// the names are shown as text, never as markup.
func TestReplyEscaped(t *testing.T) {
	f := newFixture(t, func(o *web.Options) {
		o.Family = []web.Person{{Key: erinPhone, Name: `Erin <img src=x onerror=alert(1)>`}}
	})
	b := f.browser()
	f.claude.Enqueue(anthropictest.Text(`<script>alert("reply")</script><b>bold</b>`))
	page := b.send("erin-img-src-x-onerror-alert-1", `<script>alert("mine")</script>`)
	for _, bad := range []string{`<script>alert`, `<b>bold`, `<img src=x`} {
		if strings.Contains(page.body, bad) {
			t.Errorf("the page holds %q as markup:\n%s", bad, page.body)
		}
	}
	for _, want := range []string{`&lt;script&gt;alert(&#34;reply&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;`, `&lt;script&gt;alert(&#34;mine&#34;)`, `Erin &lt;img src=x onerror=alert(1)&gt;`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page lacks the escaped %q:\n%s", want, page.body)
		}
	}
}

// TestClear checks that clearing forgets the conversation, and only it:
// the usage stays, and so does the other person's conversation.
func TestClear(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	f.claude.Enqueue(anthropictest.Text("Hello Erin."), anthropictest.Text("Hello Jason."))
	b.send("erin", "Hi")
	b.send("jason", "Hi")
	r := b.post("/people/erin/clear", url.Values{"csrf": {b.csrf("/people/erin")}})
	if r.status != http.StatusSeeOther || r.location != "/people/erin" {
		t.Fatalf("clear: status %d, location %q", r.status, r.location)
	}
	if page := b.get("/people/erin"); strings.Contains(page.body, "Hello Erin.") || !strings.Contains(page.body, "Nothing remembered") {
		t.Errorf("Erin's thread after clearing:\n%s", page.body)
	}
	if c, err := f.mem.Current(context.Background(), erinPhone); err != nil || len(c.Turns) != 0 {
		t.Errorf("Erin's memory after clearing: %d turns, %v", len(c.Turns), err)
	}
	if c, err := f.mem.Current(context.Background(), jasonPhone); err != nil || len(c.Turns) != 1 {
		t.Errorf("Jason's memory after clearing Erin's: %d turns, %v", len(c.Turns), err)
	}
	if days, err := f.mem.UsageSince(context.Background(), time0); err != nil || len(days) != 2 {
		t.Errorf("the usage ledger after clearing: %v, %v; want both people's day", days, err)
	}
}

// TestFailureShown checks that a reply the conversation does not keep (the
// API failed) is shown with the message, marked as not remembered, and
// that the next message is answered as usual.
func TestFailureShown(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	f.claude.Enqueue(anthropictest.Overloaded(), anthropictest.Text("Here now."))
	page := b.send("erin", "Are you there?")
	for _, want := range []string{"Are you there?", "not remembered"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the thread after a failure lacks %q:\n%s", want, page.body)
		}
	}
	page = b.send("erin", "Again?")
	if !strings.Contains(page.body, "Here now.") || strings.Contains(page.body, "not remembered") {
		t.Errorf("the thread after the next message:\n%s", page.body)
	}
}

// TestSharedLock checks that a message from the page waits for the
// sender's lock of the locker it shares with WhatsApp, and is answered
// once it is free.
func TestSharedLock(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	_, unlock, err := f.locker.Lock(context.Background(), erinPhone)
	if err != nil {
		t.Fatal(err)
	}
	f.claude.Enqueue(anthropictest.Text("Your turn came."))
	r := b.postMultipart("/people/erin/messages", url.Values{"csrf": {b.csrf("/people/erin")}, "message": {"Hello"}}, nil)
	if r.status != http.StatusSeeOther {
		t.Fatalf("send: status %d", r.status)
	}
	// The page's message waits behind the holder: the lock has a waiter,
	// and the API has not been called.
	for f.locker.Queued(erinPhone) < 2 {
		waitABit()
	}
	if n := len(f.claude.Requests()); n != 0 {
		t.Fatalf("the API was called %d times while the sender's lock was held elsewhere", n)
	}
	if page := b.get("/people/erin"); !strings.Contains(page.body, "Waiting for the reply") || !strings.Contains(page.body, `http-equiv="refresh"`) {
		t.Errorf("the thread of a pending message does not say so, or does not reload itself:\n%s", page.body)
	}
	unlock()
	if page := b.waitReply("erin"); !strings.Contains(page.body, "Your turn came.") {
		t.Errorf("the reply after the lock was freed is not shown:\n%s", page.body)
	}
}

// TestGuest checks the page without a family: it says how to name the
// family and lets the admin chat as Guest meanwhile.
func TestGuest(t *testing.T) {
	f := newFixture(t, func(o *web.Options) { o.Family = nil })
	b := f.browser()
	home := b.get("/")
	for _, want := range []string{"Name your family", "/home/erin/mombot/mombot.json", `"family": {`, `href="/people/admin"`, ">Admin</a>"} {
		if !strings.Contains(home.body, want) {
			t.Errorf("the home page without a family lacks %q:\n%s", want, home.body)
		}
	}
	f.claude.Enqueue(anthropictest.Text("Hello, admin."))
	page := b.send("admin", "Hello")
	if !strings.Contains(page.body, "Hello, admin.") || !strings.Contains(page.body, "web-admin") {
		t.Errorf("the guest's thread:\n%s", page.body)
	}
	if got := f.userTexts(0); len(got) != 1 || !strings.Contains(got[0], "[From Admin]") {
		t.Errorf("the guest's message reached the model as %q", got)
	}
	if c, err := f.mem.Current(context.Background(), web.Guest.Key); err != nil || len(c.Turns) != 1 {
		t.Errorf("the guest's conversation: %d turns, %v", len(c.Turns), err)
	}
}

// TestUnknownPerson checks that a person who is not in the family has no
// page and can be sent nothing.
func TestUnknownPerson(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	csrf := b.csrf("/people/erin")
	for _, r := range []response{
		b.get("/people/bob"),
		b.get("/people/" + url.PathEscape(erinPhone)),
		b.post("/people/bob/messages", url.Values{"csrf": {csrf}, "message": {"hi"}}),
		b.post("/people/bob/clear", url.Values{"csrf": {csrf}}),
		b.get("/usage?person=bob"),
		b.get("/nothing-here"),
	} {
		if r.status != http.StatusNotFound {
			t.Errorf("status %d, want 404:\n%s", r.status, r.body)
		}
	}
	if n := len(f.claude.Requests()); n != 0 {
		t.Errorf("the API was called %d times", n)
	}
}
