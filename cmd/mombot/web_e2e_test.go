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
	send := func(text string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.ID("message"), text),
			chromedp.Click(`//form[@id="composer"]//button[text()="Send"]`),
		); err != nil {
			t.Fatalf("sending %q: %v", text, err)
		}
	}
	// Chat as Erin, twice.
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.Click(`//aside//a[text()="Erin"]`), chromedp.WaitVisible(chromedp.ID("message"))); err != nil {
		t.Fatal(err)
	}
	send("Please put oat milk on the grocery list")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(threadItem("Added oat milk to the grocery list."))); err != nil {
		t.Fatalf("the first reply does not show: %v", err)
	}
	send("What did I just ask you?")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(threadItem("You asked for"))); err != nil {
		t.Fatalf("the second reply does not show: %v", err)
	}

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
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`//li[contains(@class,"call")][contains(., "list_add")][contains(., "oat milk")]`)); err != nil {
		t.Errorf("the transcript does not show the tool call: %v", err)
	}

	// Usage and lists show.
	if err := chromedp.Do(ctx,
		chromedp.Click(`//nav//a[text()="Usage"]`),
		chromedp.WaitVisible(`svg.cost-chart rect.bar`),
		chromedp.WaitVisible(`//ul[@class="legend"]/li[contains(., "Erin: $")]`),
	); err != nil {
		t.Errorf("the usage page: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(`//nav//a[text()="Lists"]`),
		chromedp.WaitVisible(`//section[@id="list-grocery"]//li[contains(., "oat milk")]`),
	); err != nil {
		t.Fatalf("the lists page: %v", err)
	}

	// Deleting works: the list item, and Erin's conversation.
	if err := chromedp.Do(ctx,
		chromedp.Click(`//section[@id="list-grocery"]//li[contains(., "oat milk")]//button[text()="Remove"]`),
		chromedp.WaitVisible(`//p[@class="empty"][contains(., "No lists yet.")]`),
	); err != nil {
		t.Errorf("removing the list item: %v", err)
	}
	// A change without its CSRF token is refused: the form's token taken
	// out, the clear button pressed, 403, and the conversation stays.
	if err := chromedp.Do(ctx,
		chromedp.Click(`//aside//a[text()="Erin"]`),
		chromedp.WaitVisible(threadItem("You asked for")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("form.clear input[name=csrf]").remove()`),
		chromedp.Click(`//button[text()="Clear conversation"]`),
		chromedp.WaitVisible(`//h1[text()="Forbidden"]`),
	); err != nil {
		t.Errorf("a clear without its CSRF token: %v", err)
	}
	resp, err := http.PostForm(base+"people/erin/clear", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST without the CSRF token got %d, want 403", resp.StatusCode)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"people/erin"),
		chromedp.WaitVisible(threadItem("You asked for")),
		chromedp.Click(`//button[text()="Clear conversation"]`),
		chromedp.WaitVisible(`//li[@class="empty"][contains(., "Nothing remembered")]`),
	); err != nil {
		t.Errorf("clearing the conversation: %v", err)
	}

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
