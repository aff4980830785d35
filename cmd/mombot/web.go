package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/web"
)

// defaultWebListen is where the family's page listens unless told
// otherwise: this machine only.
const defaultWebListen = "127.0.0.1:8080"

// pageConfig is serve's configuration of the family's page (package web).
type pageConfig struct {
	listen string
	set    bool // given with --web-listen or MOMBOT_WEB_LISTEN
	token  string
	beside bool // served beside the WhatsApp webhook
}

// register adds --web-listen to fs, with MOMBOT_WEB_LISTEN and
// MOMBOT_WEB_TOKEN from the environment.
func (c *pageConfig) register(fs *flag.FlagSet, e *env) {
	c.listen = defaultWebListen
	if v := strings.TrimSpace(e.getenv("MOMBOT_WEB_LISTEN")); v != "" {
		c.listen, c.set = v, true
	}
	c.token = strings.TrimSpace(e.getenv("MOMBOT_WEB_TOKEN"))
	fs.Func("web-listen", `address of the family's page, such as 127.0.0.1:8080; "off" for none; on this machine only unless MOMBOT_WEB_TOKEN is set (env MOMBOT_WEB_LISTEN; default `+defaultWebListen+`, or the next port when the webhook has it)`, func(v string) error {
		c.listen, c.set = strings.TrimSpace(v), true
		return nil
	})
}

// off reports whether the page is turned off.
func (c *pageConfig) off() bool { return c.listen == "off" || c.listen == "" }

// check checks the page's address against the webhook's (webhook, "" when
// WhatsApp is not served) and the token: the default moves to the next
// port when the webhook listens on its port; an address given that shares
// the webhook's port, one without a port, or one beyond this machine
// without a token is a usage error.
func (c *pageConfig) check(webhook string) error {
	if c.off() {
		return nil
	}
	if err := cli.CheckListen("serve: --web-listen", c.listen); err != nil {
		return err
	}
	c.beside = webhook != ""
	if c.beside && metrics.SharesPort(c.listen, webhook) {
		if c.set {
			return cli.Usagef("serve: --web-listen %s shares the port of the webhook (--listen %s): the family's page must be served apart from the public webhook", c.listen, webhook)
		}
		host, port, _ := net.SplitHostPort(c.listen)
		n, _ := strconv.Atoi(port)
		c.listen = net.JoinHostPort(host, strconv.Itoa(n+1))
	}
	if c.token != "" && len(c.token) < web.MinTokenLen {
		return cli.Usagef("MOMBOT_WEB_TOKEN is too short: use at least %d characters, such as the output of: openssl rand -base64 24", web.MinTokenLen)
	}
	if err := web.CheckAddr(c.listen, c.token != ""); err != nil {
		return cli.Usagef("serve: --web-listen %s is reachable from other machines, and without MOMBOT_WEB_TOKEN the page has no login: listen on this machine only (such as %s), or set MOMBOT_WEB_TOKEN", c.listen, defaultWebListen)
	}
	return nil
}

// whatsAppWanted reports whether serve is to run the WhatsApp webhook:
// one of its secrets is set, or --insecure-skip-signature asks for it.
// Without any, serve runs the family's page alone.
func whatsAppWanted(getenv func(string) string, insecure bool) bool {
	for _, k := range []string{"WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"} {
		if strings.TrimSpace(getenv(k)) != "" {
			return true
		}
	}
	return insecure
}

// guestFamily is the assistant's family while the configuration names
// nobody and the page is served: the admin who chats on the page as
// web.Guest, called by that name in the messages.
func guestFamily() map[string]assistant.Person {
	return map[string]assistant.Person{web.Guest.Key: {Name: web.Guest.Name}}
}

// page is the family's page, listening.
type page struct {
	srv *web.Server
	ln  net.Listener
	url string
}

// open builds the page over the assistant, its memory and lists, and the
// senders' locker shared with the WhatsApp server, and listens, so that a
// busy port stops serve before anything is answered. Beside WhatsApp, a
// default address that is busy (another mombot has it) is not worth
// stopping for: open says so in the log and returns no page.
func (c *pageConfig) open(e *env, cfg *assistantConfig, a *assistant.Assistant, mem *conversation.Memory, locker delivery.Locker) (*page, error) {
	fc := cfg.file
	var family []web.Person
	for number, p := range fc.Family {
		family = append(family, web.Person{Key: number, Name: p.Name})
	}
	slices.SortFunc(family, func(a, b web.Person) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.Key, b.Key))
	})
	prices, err := fc.Prices.Resolve()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	configPath := cfg.configPath
	if configPath == "" {
		configPath = config.DefaultPath
	}
	if abs, err := filepath.Abs(configPath); err == nil {
		configPath = abs
	}
	notes, _ := fc.NotesFamily() // with notes off, what is stored can still be seen and forgotten, as with mombot memory
	srv, err := web.New(web.Options{
		Assistant: a, Memory: mem, Lists: cfg.lists, Locker: locker,
		Family: family, Notes: notes, ConfigPath: configPath, Token: c.token,
		Prices: prices, PricesFrom: fc.Prices.From(), SummaryPrices: summaryPrices(fc), Logger: e.log,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil && c.beside && !c.set {
		e.log.Warn("mombot: the family's page is not served: its address is taken; give it another with --web-listen", "addr", c.listen, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("serve: the family's page: %w", err)
	}
	return &page{srv: srv, ln: ln, url: web.URL(ln.Addr())}, nil
}

// serve serves the page until ctx is done, then lets the messages being
// answered finish for up to shutdownHandled.
func (p *page) serve(ctx context.Context) error {
	return p.srv.Serve(ctx, p.ln, shutdownHandled)
}
