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

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
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
	// dedupTTL is how long a message id is remembered: Meta redelivers
	// for up to 7 days.
	dedupTTL = 7 * 24 * time.Hour
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

	// Where several replicas share a Redis, they share the queue of each
	// sender's messages, the sender lock and the record of handled messages
	// too; otherwise all are local: the queue and the record in files next
	// to the conversations. Either way a message acknowledged to Meta is
	// kept until answered, through a crash.
	if rs, ok := store.(*redis.Store); ok {
		locker, err := rs.Locker(nil)
		if err != nil {
			return err
		}
		wcfg.Locker = locker
		if wcfg.Queue, err = rs.Queue(max(wcfg.MaxAge, whatsapp.DefaultMaxAge) + queueTTL); err != nil {
			return err
		}
		wcfg.Dedup = redisDedup{rs.Dedup()}
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
		dir := dataDir(cfg.mem.store)
		seen, err := whatsapp.OpenDedupFile(filepath.Join(dir, "whatsapp-seen.json"), &whatsapp.DedupFileOptions{TTL: dedupTTL, Logger: e.log})
		if err != nil {
			return err
		}
		wcfg.Dedup = seen
		if wcfg.Queue, err = whatsapp.OpenQueueFile(filepath.Join(dir, "whatsapp-inbox.json"), &whatsapp.QueueFileOptions{Logger: e.log}); err != nil {
			return err
		}
	}
	wcfg.Responder = responder{a: a, mem: mem, log: e.log} // voice.go
	wcfg.Logger = e.log
	wa, err := whatsapp.New(wcfg)
	if err != nil {
		return err
	}
	// New already answers what an earlier process left in the inbox: every
	// way out gives that its time, before the store closes.
	stopWhatsApp := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownHandled)
		defer cancel()
		return wa.Shutdown(ctx)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		if serr := stopWhatsApp(); serr != nil {
			e.log.Warn("mombot: shutdown", "err", serr)
		}
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: wa, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	e.log.Info("mombot: serving", "addr", ln.Addr().String(), "store", storeKind(cfg.mem.store),
		"family", len(fc.Family), "whatsapp", wcfg)

	sweepDone := make(chan struct{})
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(sweepDone)
		sweep(sweepCtx, e, mem)
	}()

	select {
	case err := <-served:
		if serr := stopWhatsApp(); serr != nil {
			e.log.Warn("mombot: shutdown", "err", serr)
		}
		stopSweep()
		<-sweepDone
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	e.log.Info("mombot: shutting down: finishing the messages in hand")
	// Stop taking requests, then let accepted messages be answered, then
	// stop sweeping; the store closes last, when run returns.
	httpCtx, cancel := context.WithTimeout(context.Background(), shutdownHTTP)
	defer cancel()
	if err := srv.Shutdown(httpCtx); err != nil {
		e.log.Warn("mombot: http shutdown", "err", err)
	}
	err = stopWhatsApp()
	stopSweep()
	<-sweepDone
	if err != nil {
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

// redisDedup records handled WhatsApp message ids in Redis, shared by all
// replicas, with SET NX and a TTL.
type redisDedup struct{ d *redis.Dedup }

func (r redisDedup) Handled(ctx context.Context, id string) (bool, error) {
	return r.d.Has(ctx, "wamid:"+id)
}

func (r redisDedup) MarkHandled(ctx context.Context, id string, _ time.Time) error {
	_, err := r.d.Seen(ctx, "wamid:"+id, dedupTTL)
	return err
}

// storeKind names a store URL's kind for the log, without its path or
// credentials.
func storeKind(url string) string {
	scheme, _ := splitStoreURL(url)
	return scheme
}

func envOr(e *env, key, def string) string {
	if v := strings.TrimSpace(e.getenv(key)); v != "" {
		return v
	}
	return def
}
