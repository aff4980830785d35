package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/internal/browsertest"
)

// threadHas is an XPath to the thread's item whose text contains s, which
// holds no double quote.
func threadHas(s string) string {
	return `//ol[@id="thread"]/li[contains(., "` + s + `")]`
}

// TestBrowser drives the page in headless Chromium: with script off, a
// message is sent and its reply shows once in, by the page's own refresh;
// with script on, under the page's policy, a reply holding markup shows as
// text and nothing is blocked or run that should not be; and a list item
// is added and removed by its buttons.
func TestBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	f := newFixture(t, nil)

	t.Run("without script", func(t *testing.T) {
		tab := browsertest.Tab(t, ctx)
		if err := browsertest.NoScript(tab); err != nil {
			t.Fatal(err)
		}
		// Erin's lock is held, as by a WhatsApp message being answered:
		// the page shows the message pending, and the reply once the
		// lock is free.
		_, unlock, err := f.locker.Lock(context.Background(), erinPhone)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		f.claude.Enqueue(anthropictest.Text("Soup on Monday."))
		if err := chromedp.Do(tab,
			chromedp.Navigate(f.ts.URL),
			chromedp.Click(`//aside//a[text()="Erin"]`),
			chromedp.WaitVisible(chromedp.ID("message")),
			chromedp.SendKeys(chromedp.ID("message"), "What is for dinner on Monday?"),
			chromedp.Click(`//form[@id="composer"]//button[text()="Send"]`),
			chromedp.WaitVisible(`//li[contains(., "Waiting for the reply")]`),
		); err != nil {
			t.Fatal(err)
		}
		unlock()
		if err := chromedp.Do(tab, chromedp.WaitVisible(threadHas("Soup on Monday."))); err != nil {
			t.Fatalf("the reply does not show without script: %v", err)
		}
		if got, err := chromedp.Run(tab, chromedp.Location()); err != nil || !strings.HasSuffix(got, "/people/erin") {
			t.Errorf("the page after the post is %q, %v", got, err)
		}
	})

	t.Run("with script", func(t *testing.T) {
		tab := browsertest.Tab(t, ctx)
		if err := browsertest.WatchCSP(tab); err != nil {
			t.Fatal(err)
		}
		f.claude.Enqueue(anthropictest.Text(`Try <script>document.title="pwned"</script><img src="/x" onerror="document.title='pwned'"> this.`))
		if err := chromedp.Do(tab,
			chromedp.Navigate(f.ts.URL),
			chromedp.Click(`//aside//a[text()="Jason"]`),
			chromedp.WaitVisible(chromedp.ID("message")),
			chromedp.SendKeys(chromedp.ID("message"), "Any idea for the weekend?"),
			chromedp.Click(`//form[@id="composer"]//button[text()="Send"]`),
			chromedp.WaitVisible(threadHas("Try")),
		); err != nil {
			t.Fatalf("the reply does not show: %v", err)
		}
		reply, err := chromedp.Run(tab, chromedp.Text(threadHas("Try")))
		if want := `Try <script>document.title="pwned"</script><img src="/x" onerror="document.title='pwned'"> this.`; err != nil || reply != want {
			t.Errorf("the reply shows as %q, %v; want the text %q", reply, err, want)
		}
		if title, err := chromedp.Run(tab, chromedp.Title()); err != nil || title != "Jason · mombot" {
			t.Errorf("the page's title is %q, %v: the reply's markup ran", title, err)
		}
		if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#thread script, #thread img").length`)); err != nil || n != 0 {
			t.Errorf("the thread holds %d script or img elements, %v", n, err)
		}

		// The lists: one added from the page, then removed by its button.
		if err := chromedp.Do(tab,
			chromedp.Click(`//nav//a[text()="Lists"]`),
			chromedp.SendKeys(`//input[@name="list"]`, "grocery"),
			chromedp.SendKeys(`//textarea[@name="item"]`, "oat milk"),
			chromedp.Click(`//section[contains(@class,"new")]//button`),
			chromedp.WaitVisible(`//section[@id="list-grocery"]//li[contains(., "oat milk")]`),
			chromedp.Click(`//section[@id="list-grocery"]//li[contains(., "oat milk")]//button`),
			chromedp.WaitVisible(`//p[@class="empty"][contains(., "No lists yet.")]`),
		); err != nil {
			t.Fatalf("editing the lists: %v", err)
		}
		if got := f.listTexts(); got != "" {
			t.Errorf("the lists after removing the item: %q", got)
		}
		if err := chromedp.Do(tab, chromedp.Click(`//nav//a[text()="Usage"]`), chromedp.WaitVisible(`svg.cost-chart rect.bar`)); err != nil {
			t.Errorf("the usage chart does not show: %v", err)
		}
		v, err := browsertest.CSPViolations(tab)
		if err != nil || len(v) != 0 {
			t.Errorf("the policy blocked something on the pages: %q, %v", v, err)
		}
	})
}
