// Package browsertest starts a headless Chromium for tests that drive a
// page in a real browser with chromedp.
//
// The browser is Debian's chromium package (/usr/bin/chromium, or the
// one MOMBOT_CHROMIUM names), started with a fresh profile and the flags
// that keep it off the network: it only loads what a test points it at.
// Where no browser can run, a test that asks for one skips with a message
// that says why; with MOMBOT_CI set (as .ci/run sets it) it fails instead,
// so CI never passes by skipping.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Candidates are the browser programs looked for on PATH, in order, when
// MOMBOT_CHROMIUM is not set.
var Candidates = []string{"chromium", "chromium-browser", "google-chrome"}

// Timeout bounds a whole browser test: a page that never shows what the
// test waits for fails it rather than hanging the suite.
const Timeout = 60 * time.Second

// Find returns the browser to run: MOMBOT_CHROMIUM if set, otherwise the
// first of Candidates on PATH.
func Find() (string, error) {
	if p := os.Getenv("MOMBOT_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("MOMBOT_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range Candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found (install Debian's chromium and chromium-driver packages, or set MOMBOT_CHROMIUM)")
}

// unavailable skips t, or fails it when CI must run it.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("MOMBOT_CI") != "" {
		t.Fatalf("browser test cannot run, and CI (MOMBOT_CI is set) must run it: %s", why)
	}
	t.Skipf("skipping browser test: %s", why)
}

// New starts a headless Chromium with a fresh profile and returns a
// chromedp context of one tab in it, bounded by [Timeout]. The browser is
// closed when t ends.
func New(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		unavailable(t, "-short")
	}
	path, err := Find()
	if err != nil {
		unavailable(t, err.Error())
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, Timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	// The first action starts the browser: a failure here is the machine's
	// (no display libraries, a sandbox refused), not the page's.
	if err := chromedp.Do(ctx); err != nil {
		unavailable(t, fmt.Sprintf("%s does not start: %v", path, err))
	}
	return ctx
}

// Tab opens another tab in the browser of ctx, closed when t ends.
func Tab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return tab
}

// NoScript turns JavaScript off in the tab of ctx, as a person who has
// it off would browse: pages load no script and <noscript> counts.
func NoScript(ctx context.Context) error {
	_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
	return err
}

// cspKey is where WatchCSP keeps the violations, in the tab's session
// storage, so that they outlive the page that had them.
const cspKey = "browsertest-csp-violations"

// WatchCSP records, in the tab of ctx and from its next page on, every
// Content-Security-Policy violation: what the policy blocked. The
// recorder is the browser's own (devtools), which the policy does not
// govern.
func WatchCSP(ctx context.Context) error {
	src := `document.addEventListener("securitypolicyviolation", function (e) {
  var seen = JSON.parse(sessionStorage.getItem("` + cspKey + `") || "[]");
  seen.push(location.pathname + ": " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " " + (e.sample || ""));
  sessionStorage.setItem("` + cspKey + `", JSON.stringify(seen));
});`
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
	return err
}

// CSPViolations returns the violations WatchCSP recorded in the tab of
// ctx, on its pages of the current page's origin.
func CSPViolations(ctx context.Context) ([]string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](`JSON.parse(sessionStorage.getItem("`+cspKey+`") || "[]")`))
}

// Follow clicks what the XPath or CSS selector sel finds, waits for the
// page the click leads to (after any redirects) to load, and returns its
// HTTP status. A click that leads nowhere waits until ctx is done.
func Follow(ctx context.Context, sel string) (int, error) {
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(sel))
	if err != nil {
		return 0, err
	}
	if resp == nil {
		return 0, errors.New("browsertest: the click loaded no document")
	}
	return int(resp.Status), nil
}

// transient are the errors of a query that met a page being replaced (a
// reload or a refresh of the page's own): the query is tried again.
var transient = []string{"Could not find node with given id", "No node with given id found", "Cannot find context with specified id", "Node with given id does not belong to the document"}

// WaitVisible waits until the selector sel finds a visible element, also
// across the page's own reloads (a meta refresh, a script's
// location.reload), until ctx is done.
func WaitVisible(ctx context.Context, sel string) error {
	for {
		err := chromedp.Do(ctx, chromedp.WaitVisible(sel))
		if err == nil || ctx.Err() != nil || !slices.ContainsFunc(transient, func(s string) bool { return strings.Contains(err.Error(), s) }) {
			return err
		}
	}
}
