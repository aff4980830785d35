package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/browsertest"
)

// threadHas is an XPath to the thread's item whose text contains s, which
// holds no double quote.
func threadHas(s string) string {
	return `//ol[@id="thread"]/li[contains(., "` + s + `")]`
}

// follow clicks sel and waits for the page it leads to, which must be
// served 200.
func follow(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	status, err := browsertest.Follow(ctx, sel)
	if err != nil || status != http.StatusOK {
		t.Fatalf("following %s: status %d, %v", sel, status, err)
	}
}

// waitVisible waits until sel shows, across the page's own reloads.
func waitVisible(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := browsertest.WaitVisible(ctx, sel); err != nil {
		t.Fatalf("waiting for %s: %v", sel, err)
	}
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
		if err := chromedp.Do(tab, chromedp.Navigate(f.ts.URL)); err != nil {
			t.Fatal(err)
		}
		follow(t, tab, `//aside//a[text()="Erin"]`)
		if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.ID("message"), "What is for dinner on Monday?")); err != nil {
			t.Fatal(err)
		}
		follow(t, tab, `//form[@id="composer"]//button[text()="Send"]`)
		waitVisible(t, tab, `//li[contains(., "Waiting for the reply")]`)
		unlock()
		waitVisible(t, tab, threadHas("Soup on Monday."))
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
		if err := chromedp.Do(tab, chromedp.Navigate(f.ts.URL)); err != nil {
			t.Fatal(err)
		}
		follow(t, tab, `//aside//a[text()="Jason"]`)
		if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.ID("message"), "Any idea for the weekend?")); err != nil {
			t.Fatal(err)
		}
		follow(t, tab, `//form[@id="composer"]//button[text()="Send"]`)
		waitVisible(t, tab, threadHas("Try"))
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
		follow(t, tab, `//nav//a[text()="Lists"]`)
		if err := chromedp.Do(tab,
			chromedp.SendKeys(`//section[contains(@class,"new")]//input[@name="list"]`, "grocery"),
			chromedp.SendKeys(`//section[contains(@class,"new")]//textarea[@name="item"]`, "oat milk"),
		); err != nil {
			t.Fatal(err)
		}
		follow(t, tab, `//section[contains(@class,"new")]//button`)
		waitVisible(t, tab, `//section[@id="list-grocery"]//li[contains(., "oat milk")]`)
		follow(t, tab, `//section[@id="list-grocery"]//li[contains(., "oat milk")]//button`)
		waitVisible(t, tab, `//p[@class="empty"][contains(., "No lists yet.")]`)
		if got := f.listTexts(); got != "" {
			t.Errorf("the lists after removing the item: %q", got)
		}
		follow(t, tab, `//nav//a[text()="Usage"]`)
		waitVisible(t, tab, `svg.cost-chart rect.bar`)
		v, err := browsertest.CSPViolations(tab)
		if err != nil || len(v) != 0 {
			t.Errorf("the policy blocked something on the pages: %q, %v", v, err)
		}
	})
}

// TestBrowserForget forgets a note and deletes a summary by their buttons
// in headless Chromium, under the page's policy.
func TestBrowserForget(t *testing.T) {
	ctx := browsertest.New(t)
	f, fam, _ := notesFixture(t)
	data := `{"text":"Erin plays chess on Tuesdays","updated":"2026-11-20T10:00:00Z"}`
	if _, err := f.store.Put(context.Background(), conversation.Summaries, conversation.Record{Key: erinPhone, Data: []byte(data)}, 0); err != nil {
		t.Fatal(err)
	}
	tab := browsertest.Tab(t, ctx)
	if err := browsertest.WatchCSP(tab); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(f.ts.URL+"/people/erin")); err != nil {
		t.Fatal(err)
	}
	follow(t, tab, `//li[@class="note"][contains(., "#1")]//button[text()="Forget"]`)
	waitVisible(t, tab, `//li[@class="note"][contains(., "#2")]`)
	if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("li.note").length`)); err != nil || n != 1 {
		t.Errorf("after forgetting #1 the page lists %d notes, %v; want 1", n, err)
	}
	if notes, err := f.mem.Notes(context.Background(), fam, erinPhone); err != nil || len(notes) != 1 {
		t.Errorf("after forgetting #1 Erin sees %d notes, %v; want 1", len(notes), err)
	}
	follow(t, tab, `//button[text()="Delete summary"]`)
	waitVisible(t, tab, `//p[contains(., "No summary of Erin")]`)
	if s, err := f.mem.LoadSummary(context.Background(), erinPhone); err != nil || s.Text != "" {
		t.Errorf("after Delete summary the summary is %+v, %v", s, err)
	}
	if v, err := browsertest.CSPViolations(tab); err != nil || len(v) != 0 {
		t.Errorf("the policy blocked something on the page: %q, %v", v, err)
	}
}
