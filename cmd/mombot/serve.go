package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/delivery"
	deliveryredis "github.com/mombot/mombot/delivery/redis"
	"github.com/mombot/mombot/whatsapp"
)

const serveUsage = `Usage: mombot serve [flags]

Runs the WhatsApp webhook server: Meta posts messages to /webhook, the
assistant answers them with each person's conversation memory, and the
replies go back through the Cloud API. GET /healthz tells whether it runs.

Secrets come from the environment only:
  ANTHROPIC_API_KEY         the Claude API key (ANTHROPIC_BASE_URL: another endpoint)
  WHATSAPP_ACCESS_TOKEN     the Cloud API access token
  WHATSAPP_APP_SECRET       the Meta app secret, to check webhook signatures
  WHATSAPP_VERIFY_TOKEN     the token you chose for the webhook handshake
  WHATSAPP_PHONE_NUMBER_ID  the business number's id (or whatsapp.phone_number_id in the config)
  WHATSAPP_GRAPH_URL        another Graph API base URL (or whatsapp.graph_url)

Flags:`

// Timings of the server's life.
const (
	sweepEvery      = 10 * time.Minute // expired conversations of file and sqlite stores
	shutdownHTTP    = 10 * time.Second // for requests in flight
	shutdownHandled = 60 * time.Second // for accepted messages to be answered; the rest wait for the next start
	// queueTTL is how long a sender's messages shared by the replicas wait
	// for one to take them, should every replica stop before it does,
	// beyond the age after which they would be skipped anyway.
	queueTTL = time.Hour
)

func runServe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mombot serve", flag.ContinueOnError)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	listen := fs.String("listen", envOr(e, "MOMBOT_LISTEN", ":8080"), "address to serve on (env MOMBOT_LISTEN)")
	insecure := fs.Bool("insecure-skip-signature", false, "DEVELOPMENT ONLY: accept webhooks without a valid X-Hub-Signature-256 when WHATSAPP_APP_SECRET is not set")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}

	fc, err := loadConfig(cfg.configPath)
	if err != nil {
		return err
	}
	wcfg, err := whatsAppSettings(e, fc, *insecure)
	if err != nil {
		return err
	}
	// A server answers without memory until Redis answers, rather than
	// not at all.
	cfg.mem.startWithoutRedis = true
	a, mem, store, err := cfg.open(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()

	// Where several replicas share a Redis, they share the inbox of each
	// sender's messages (with the record of handled ones) and the sender
	// lock too; otherwise both are local: the inbox in a file next to the
	// conversations. Either way a message acknowledged to Meta is kept
	// until answered, through a crash.
	if rs, ok := store.(*redis.Store); ok {
		if wcfg.Locker, err = deliveryredis.NewLocker(rs.Client(), &deliveryredis.LockerOptions{Prefix: rs.Prefix(), Logger: e.log}); err != nil {
			return err
		}
		inboxTTL := max(wcfg.MaxAge, whatsapp.DefaultMaxAge) + queueTTL
		if wcfg.Inbox, err = deliveryredis.NewInbox(rs.Client(), &deliveryredis.InboxOptions{Prefix: rs.Prefix(), QueueTTL: inboxTTL}); err != nil {
			return err
		}
		// While Redis is down the replicas still answer, holding the
		// messages in memory, rather than refusing every delivery.
		wcfg.MemoryFallback = true
		wcfg.Health = func(ctx context.Context) error {
			if err := rs.Ping(ctx); err != nil {
				return fmt.Errorf("conversation memory (redis) unreachable, answering without it: %w", err)
			}
			return nil
		}
	} else {
		// whatsapp-seen.json held the handled ids before they joined the
		// inbox file: they are taken in.
		dir := storeurl.Dir(cfg.mem.store)
		if wcfg.Inbox, err = delivery.OpenFile(filepath.Join(dir, "whatsapp-inbox.json"),
			&delivery.FileOptions{Logger: e.log, Handled: filepath.Join(dir, "whatsapp-seen.json")}); err != nil {
			return err
		}
	}
	wcfg.Responder = whatsapp.ResponderFunc(func(ctx context.Context, in whatsapp.Inbound) (string, error) {
		// Handle logs its failures and always returns a reply fit to
		// send, kind when something went wrong.
		reply, _ := a.Handle(ctx, assistant.Inbound{From: in.From, Text: in.Text, Image: in.Image, ImageType: in.ImageType, Time: in.Time})
		return reply.Text, nil
	})
	wcfg.Logger = e.log
	wa, err := whatsapp.New(wcfg)
	if err != nil {
		return err
	}
	sweepDone := make(chan struct{})
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(sweepDone)
		sweep(sweepCtx, e, mem)
	}()
	// shutdown is every way out, in one order: stop taking requests (srv
	// is nil before listening), let the accepted messages be answered
	// (New already answers what an earlier process left in the inbox),
	// then stop sweeping; the store closes last, when run returns.
	shutdown := func(srv *http.Server) error {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), shutdownHTTP)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				e.log.Warn("mombot: http shutdown", "err", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownHandled)
		defer cancel()
		err := wa.Shutdown(ctx)
		stopSweep()
		<-sweepDone
		return err
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		if serr := shutdown(nil); serr != nil {
			e.log.Warn("mombot: shutdown", "err", serr)
		}
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: wa, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	e.log.Info("mombot: serving", "addr", ln.Addr().String(), "store", storeurl.Kind(cfg.mem.store),
		"family", len(fc.Family), "whatsapp", wcfg)

	select {
	case err := <-served:
		if serr := shutdown(srv); serr != nil {
			e.log.Warn("mombot: shutdown", "err", serr)
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	e.log.Info("mombot: shutting down: finishing the messages in hand")
	if err := shutdown(srv); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	e.log.Info("mombot: stopped")
	return nil
}

// whatsAppSettings gathers the Cloud API settings from the environment and
// the configuration file.
func whatsAppSettings(e *env, fc *fileConfig, insecure bool) (whatsapp.Config, error) {
	c := whatsapp.Config{
		AccessToken:   strings.TrimSpace(e.getenv("WHATSAPP_ACCESS_TOKEN")),
		AppSecret:     strings.TrimSpace(e.getenv("WHATSAPP_APP_SECRET")),
		VerifyToken:   strings.TrimSpace(e.getenv("WHATSAPP_VERIFY_TOKEN")),
		PhoneNumberID: envOr(e, "WHATSAPP_PHONE_NUMBER_ID", fc.WhatsApp.PhoneNumberID),
		BaseURL:       envOr(e, "WHATSAPP_GRAPH_URL", fc.WhatsApp.GraphURL),
		APIVersion:    fc.WhatsApp.GraphVersion,
		AllowUnsigned: insecure && strings.TrimSpace(e.getenv("WHATSAPP_APP_SECRET")) == "",
		Family:        map[string]string{},
	}
	if c.AppSecret == "" && !insecure {
		return c, errors.New("WHATSAPP_APP_SECRET is not set: without it anyone could post messages to the webhook (for local development only: --insecure-skip-signature)")
	}
	for _, name := range []struct{ v, env string }{
		{c.AccessToken, "WHATSAPP_ACCESS_TOKEN"},
		{c.VerifyToken, "WHATSAPP_VERIFY_TOKEN"},
		{c.PhoneNumberID, "WHATSAPP_PHONE_NUMBER_ID"},
	} {
		if name.v == "" {
			return c, fmt.Errorf("%s is not set", name.env)
		}
	}
	if fc.WhatsApp.MaxAge != "" {
		c.MaxAge, _ = time.ParseDuration(fc.WhatsApp.MaxAge) // checked by loadConfig
	}
	for phone, p := range fc.Family {
		c.Family[phone] = p.Name
	}
	if len(c.Family) == 0 {
		e.log.Warn("mombot: the configuration names no family members, so no WhatsApp message will be answered")
	}
	return c, nil
}

// sweep deletes expired conversations now and then, so people who never
// come back do not stay on disk; Redis expires its keys by itself.
func sweep(ctx context.Context, e *env, mem *conversation.Memory) {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		if n, err := mem.Sweep(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("mombot: sweeping expired conversations", "err", err)
		} else if n > 0 {
			e.log.Info("mombot: swept expired conversations", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func envOr(e *env, key, def string) string {
	if v := strings.TrimSpace(e.getenv(key)); v != "" {
		return v
	}
	return def
}
