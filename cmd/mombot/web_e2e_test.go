package main

// The family's page end to end, in headless Chromium: the real mombot
// binary, started as the README's first command starts it, with only the
// Anthropic key (a fake Messages API) and a mombot.json naming Erin and
// Jason in its working folder.

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/browsertest"
	"github.com/mombot/mombot/internal/logtest"
)

func TestPageInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	bin := buildMombot(t)
	claude := anthropictest.NewServer(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mombot.json"), []byte(`{"family": {"+14155551234": {"name": "Erin"}, "+14155556789": {"name": "Jason"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--web-listen", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ANTHROPIC_API_KEY=" + anthropictest.APIKey, "ANTHROPIC_BASE_URL=" + claude.URL}
	logs := &logtest.Buffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(logs, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); exited <- err }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("log of mombot serve:\n%s", logs.String())
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := pageAloneRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case err := <-exited:
		t.Fatalf("mombot serve exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("mombot serve did not say where the page is")
	}

	claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"list": "grocery", "items": []string{"oat milk"}}}),
		anthropictest.Text("Added oat milk to the grocery list."),
		anthropictest.Text(`You asked for <b>oat milk</b>. <script>document.title="pwned"</script>`),
	)
	// Every click that leads to a page waits for it (follow), and every
	// wait for what a reply brings rides out the page's own reloads.
	follow := func(sel string, want int) {
		t.Helper()
		status, err := browsertest.Follow(ctx, sel)
		if err != nil || status != want {
			t.Fatalf("following %s: status %d, %v; want %d", sel, status, err, want)
		}
	}
	wait := func(sel string) {
		t.Helper()
		if err := browsertest.WaitVisible(ctx, sel); err != nil {
			t.Fatalf("waiting for %s: %v", sel, err)
		}
	}
	send := func(text string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("message"), text)); err != nil {
			t.Fatalf("typing %q: %v", text, err)
		}
		follow(`//form[@id="composer"]//button[text()="Send"]`, http.StatusOK)
	}
	// Chat as Erin, twice.
	if err := chromedp.Do(ctx, chromedp.Navigate(base)); err != nil {
		t.Fatal(err)
	}
	follow(`//aside//a[text()="Erin"]`, http.StatusOK)
	send("Please put oat milk on the grocery list")
	wait(threadItem("Added oat milk to the grocery list."))
	send("What did I just ask you?")
	wait(threadItem("You asked for"))

	// The second message carried the first to the model.
	reqs := claude.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the fake Messages API got %d requests, want 3", len(reqs))
	}
	if first := userTextOf(t, reqs[2], 0); !strings.Contains(first, "Please put oat milk on the grocery list") {
		t.Errorf("the second message's request starts with %q, not the first message", first)
	}

	// The reply holding HTML is text; the transcript shows the tool call.
	reply, err := chromedp.Run(ctx, chromedp.Text(threadItem("You asked for")))
	if want := `You asked for <b>oat milk</b>. <script>document.title="pwned"</script>`; err != nil || reply != want {
		t.Errorf("the reply shows as %q, %v; want the text %q", reply, err, want)
	}
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "Erin · mombot" {
		t.Errorf("the title is %q, %v: the reply's markup ran", title, err)
	}
	wait(`//li[contains(@class,"call")][contains(., "list_add")][contains(., "oat milk")]`)

	// Usage and lists show.
	follow(`//nav//a[text()="Usage"]`, http.StatusOK)
	wait(`svg.cost-chart rect.bar`)
	wait(`//ul[@class="legend"]/li[contains(., "Erin: $")]`)
	follow(`//nav//a[text()="Lists"]`, http.StatusOK)
	wait(`//section[@id="list-grocery"]//li[contains(., "oat milk")]`)

	// Deleting works: the list item, and Erin's conversation.
	follow(`//section[@id="list-grocery"]//li[contains(., "oat milk")]//button[text()="Remove"]`, http.StatusOK)
	wait(`//p[@class="empty"][contains(., "No lists yet.")]`)
	// A change without its CSRF token is refused: the form's token taken
	// out, the clear button pressed, 403, and the conversation stays.
	follow(`//aside//a[text()="Erin"]`, http.StatusOK)
	wait(threadItem("You asked for"))
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("form.clear input[name=csrf]").remove()`)); err != nil {
		t.Fatal(err)
	}
	follow(`//button[text()="Clear conversation"]`, http.StatusForbidden)
	wait(`//h1[text()="Forbidden"]`)
	resp, err := http.PostForm(base+"people/erin/clear", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST without the CSRF token got %d, want 403", resp.StatusCode)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"people/erin")); err != nil {
		t.Fatal(err)
	}
	wait(threadItem("You asked for"))
	follow(`//button[text()="Clear conversation"]`, http.StatusOK)
	wait(`//li[@class="empty"][contains(., "Nothing remembered")]`)

	// A graceful stop, and nothing in the log that must not be there.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("mombot serve after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mombot serve did not stop")
	}
	for _, secret := range []string{anthropictest.APIKey, "4155551234", "4155556789"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
	for _, r := range claude.Rejected() {
		t.Errorf("the fake Messages API rejected a request: %s", r)
	}
}

// threadItem is an XPath to the item of the thread whose text contains s,
// which holds no double quote.
func threadItem(s string) string { return `//ol[@id="thread"]/li[contains(., "` + s + `")]` }

// userTextOf returns the text of the i-th user message of the request.
func userTextOf(t *testing.T, r anthropictest.Request, i int) string {
	t.Helper()
	n := 0
	for _, raw := range r.Params.Messages {
		var m conversation.Message
		if err := m.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		if m.Role != conversation.RoleUser {
			continue
		}
		if n == i {
			return m.Text()
		}
		n++
	}
	t.Fatalf("the request has no user message %d", i)
	return ""
}
