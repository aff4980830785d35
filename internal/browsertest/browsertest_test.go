package browsertest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mombot/mombot/internal/browsertest"
)

// TestHelpers checks the helpers on a page of its own: a tab with script
// shows what the script writes, and WatchCSP sees the inline script that
// the policy blocks; a tab without script shows <noscript> instead.
func TestHelpers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/s.js" {
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(`document.getElementById("x").textContent = "script ran";`))
			return
		}
		w.Header().Set("Content-Security-Policy", "script-src 'self'")
		w.Write([]byte(`<title>t</title><p id="x">no script</p><noscript><p id="n">noscript shown</p></noscript>
<script src="/s.js"></script><script>document.title = "inline ran";</script>`))
	}))
	defer srv.Close()
	ctx := browsertest.New(t)

	if err := browsertest.WatchCSP(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("x"))); err != nil || got != "script ran" {
		t.Errorf("with script: #x is %q, %v", got, err)
	}
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "t" {
		t.Errorf("the inline script ran despite the policy: title %q, %v", title, err)
	}
	v, err := chromedp.Run(ctx, chromedp.Poll[[]string](`JSON.parse(sessionStorage.getItem("browsertest-csp-violations") || "[]").length > 0 && JSON.parse(sessionStorage.getItem("browsertest-csp-violations"))`))
	if err != nil || len(v) != 1 || !strings.Contains(v[0], "script-src") {
		t.Errorf("the violations recorded: %q, %v; want the inline script's", v, err)
	}

	tab := browsertest.Tab(t, ctx)
	if err := browsertest.NoScript(tab); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.ID("n"))); err != nil {
		t.Errorf("without script, <noscript> does not show: %v", err)
	}
	if got, err := chromedp.Run(tab, chromedp.Text(chromedp.ID("x"))); err != nil || got != "no script" {
		t.Errorf("without script: #x is %q, %v", got, err)
	}
}
