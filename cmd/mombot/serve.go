package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/whatsapp"
)

const serveUsage = `Usage: mombot serve [flags]

Runs the WhatsApp webhook server: Meta posts messages to /webhook, the
assistant answers them with each person's conversation memory, and the
replies go back through the Cloud API. GET /healthz tells whether it runs.

Beside it, on an address of its own (--web-listen), it serves the family's
page: chat as anyone in the family, see and clear what the assistant
remembers, edit the lists, see what it costs (docs/web.md). Without any
WHATSAPP_* secret, serve runs the page alone: ANTHROPIC_API_KEY is all it
needs.

Secrets come from the environment only:
  ANTHROPIC_API_KEY         the Claude API key (ANTHROPIC_BASE_URL: another endpoint)
  MOMBOT_WEB_TOKEN          the page's password; without it, the page has no login and
                            listens on this machine only
  WHATSAPP_ACCESS_TOKEN     the Cloud API access token
  WHATSAPP_APP_SECRET       the Meta app secret, to check webhook signatures
  WHATSAPP_VERIFY_TOKEN     the token you chose for the webhook handshake
  WHATSAPP_PHONE_NUMBER_ID  the business number's id (or whatsapp.phone_number_id in the config)
  WHATSAPP_GRAPH_URL        the Graph API base URL (or whatsapp.graph_url): only
                            https://graph.facebook.com, unless the environment
                            has MOMBOT_INSECURE_TEST_ENDPOINTS=1 (tests' fakes)

Flags:`

// Timings of the server's life.
const (
	sweepEvery      = 10 * time.Minute // expired conversations (folded into summaries), old recent messages, usage and summaries, on every store
	shutdownHandled = 60 * time.Second // for accepted messages to be answered; the rest wait for the next start
)

func runServe(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot serve", serveUsage)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	listen := fs.String("listen", envOr(e, "MOMBOT_LISTEN", ":8080"), "address to serve on (env MOMBOT_LISTEN)")
	metricsListen := fs.String("metrics-listen", envOr(e, "MOMBOT_METRICS_LISTEN", ""), "address to serve Prometheus /metrics on, such as 127.0.0.1:9090; off when empty; never the --listen address (env MOMBOT_METRICS_LISTEN)")
	insecure := fs.Bool("insecure-skip-signature", false, "DEVELOPMENT ONLY: accept webhooks without a valid X-Hub-Signature-256 when WHATSAPP_APP_SECRET is not set")
	var pg pageConfig // web.go
	pg.register(fs, e)
	if err := cli.Parse(fs, e.stderr, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("serve takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	if err := cli.CheckListen("serve: --listen", *listen); err != nil {
		return err
	}
	if *metricsListen != "" {
		if err := cli.CheckListen("serve: --metrics-listen", *metricsListen); err != nil {
			return err
		}
	}

	fc, err := config.Load(cfg.configPath)
	if err != nil {
		return err
	}
	cfg.file = fc
	// Without any of WhatsApp's secrets, serve runs the family's page
	// alone; with some, WhatsApp must be set up whole.
	withWhatsApp := whatsAppWanted(e.getenv, *insecure) || pg.off()
	var wcfg whatsapp.Config
	webhook := ""
	if withWhatsApp {
		if wcfg, err = fc.WhatsAppConfig(e.getenv, config.WhatsAppOptions{SkipSignature: *insecure, InsecureTestEndpoints: e.insecureEndpoints}); err != nil {
			return err
		}
		webhook = *listen
	}
	if err := pg.check(webhook); err != nil {
		return err
	}
	if !pg.off() && len(fc.Family) == 0 {
		cfg.extraFamily = guestFamily()
	}
	// A server answers without memory until Redis answers, rather than
	// not at all.
	cfg.mem.startWithoutRedis = true
	var (
		m  *metrics.Metrics
		ms *metrics.Server
	)
	if *metricsListen != "" {
		if withWhatsApp && metrics.SharesPort(*metricsListen, *listen) {
			return cli.Usagef("serve: --metrics-listen %s is the webhook address: the metrics must be served apart from the public port", *metricsListen)
		}
		m = metrics.New()
		cfg.mem.wrap = func(s conversation.Store) (conversation.Store, error) { return m.Store(s), nil }
		cfg.apiTransport = m.Transport
	}
	a, mem, store, err := cfg.open(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	// Warned once the settings are known to be complete, at start.
	if e.insecureEndpoints {
		e.log.Warn("mombot: INSECURE: " + insecureEndpointsEnv + "=1: the Graph API and transcription URLs may be http, and the Graph API another host than Meta's; for tests against fake APIs only")
	}
	warnWritableConfig(e, fc)

	// One lock per sender for every way a message comes in, WhatsApp and
	// the page, so that two messages of one person never run at once; the
	// locks, and WhatsApp's inbox, follow the store URL (inbox.go). Either
	// way a message acknowledged to Meta is kept until answered, through a
	// crash.
	snd, err := openSenders(ctx, cfg.mem.store, e.log)
	if err != nil {
		return err
	}
	defer snd.close()
	var inbox delivery.Inbox
	if withWhatsApp {
		if inbox, err = snd.inbox(ctx, wcfg.MaxAge, e.log); err != nil {
			return err
		}
		wcfg.Logger = e.log
	}
	if m != nil {
		if withWhatsApp {
			wcfg.Observer = m
			m.InboxDepth(inbox)
		}
		// The metrics address is taken before the server starts its work,
		// so that a busy port stops serve before anything is answered.
		ms, err = m.Serve(*metricsListen)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		e.log.Info("mombot: metrics serving", "addr", ms.Addr().String(), "path", "/metrics")
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ms.Shutdown(ctx)
		}()
	}
	// The page's address too is taken first (web.go).
	var site *page
	if !pg.off() {
		if site, err = pg.open(e, &cfg, a, mem, snd.locker); err != nil {
			return err
		}
		if site != nil {
			defer site.ln.Close() // closed already once it has served
		}
	}
	build := currentBuild()
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	swept := make(chan struct{})
	go func() { defer close(swept); mem.SweepEvery(sweepCtx, sweepEvery, e.log, a.Summarizer()) }()
	// The store closes last, when run returns: after the servers have
	// finished the messages in hand and the sweeping has stopped.
	if withWhatsApp {
		wa := messagePath{cfg: wcfg, senders: snd, inbox: inbox, a: a, mem: mem, m: m}
		err = serveWhatsApp(ctx, e, wa, *listen, site, ms, build.String(), func(addr net.Addr) {
			e.log.Info("mombot: serving", "addr", addr.String(), "store", storeurl.Kind(cfg.mem.store), "family", len(fc.Family), "whatsapp", wcfg.WithDefaults(), "build", build)
		})
	} else {
		e.log.Info("mombot: WhatsApp is not set up (no WHATSAPP_* secrets), so serve runs the family's page alone at "+site.url, "store", storeurl.Kind(cfg.mem.store), "family", len(fc.Family), "build", build)
		err = site.serve(ctx)
	}
	stopSweep()
	<-swept
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	e.log.Info("mombot: stopped")
	return nil
}

// messagePath is what a WhatsApp message's path is built of.
type messagePath struct {
	cfg     whatsapp.Config
	senders *senders
	inbox   delivery.Inbox
	a       *assistant.Assistant
	mem     *conversation.Memory
	m       *metrics.Metrics // nil without --metrics-listen
}

// open builds the path of docs/architecture.md: the WhatsApp Server keeps
// each message in the delivery pipeline; the pipeline hands it, under the
// sender's lock, to the answerer (answer.go), which has the WhatsApp
// Client read it, the assistant answer it and the Client send the reply.
// The pipeline starts at once on what an earlier process left in the
// inbox.
func (p messagePath) open(e *env) (*whatsapp.Server, error) {
	wa, err := whatsapp.NewClient(p.cfg)
	if err != nil {
		return nil, err
	}
	pipe := delivery.New(answerer{wa: wa, a: p.a, mem: p.mem, log: e.log, m: p.m, outcomes: &outcomeBook{}}, &delivery.Options{
		Inbox: p.inbox, Locker: p.senders.locker, Logger: e.log,
	})
	srv, err := whatsapp.NewServer(wa, pipe, &whatsapp.ServerOptions{Health: p.senders.health()})
	if err != nil {
		// What the pipeline took up waits in the inbox for the next start.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		pipe.Shutdown(ctx)
		return nil, err
	}
	return srv, nil
}

// serveWhatsApp runs the WhatsApp server of path on listen and, if site is
// not nil, the family's page beside it, until ctx is done or the WhatsApp
// server fails; the page stops with it. With a metrics server ms, its
// /healthz answers too, with the build's version for ?verbose=1.
func serveWhatsApp(ctx context.Context, e *env, path messagePath, listen string, site *page, ms *metrics.Server, version string, serving func(net.Addr)) error {
	wa, err := path.open(e)
	if err != nil {
		return err
	}
	if ms != nil {
		// The build, and so the Go release, is for the host's monitoring,
		// not the public port's /healthz.
		ms.Handle("GET /healthz", wa.HealthHandler(version))
	}
	pageCtx, stopPage := context.WithCancel(ctx)
	defer stopPage()
	pageDone := make(chan error, 1)
	if site != nil {
		e.log.Info("mombot: the family's page is at " + site.url)
		go func() {
			err := site.serve(pageCtx)
			if err != nil && pageCtx.Err() == nil {
				e.log.Error("mombot: the family's page stopped", "err", err)
			}
			pageDone <- err
		}()
	} else {
		pageDone <- nil
	}
	err = wa.ListenAndServe(ctx, listen, &whatsapp.ServeOptions{Drain: shutdownHandled, Serving: serving})
	stopPage()
	return errors.Join(err, <-pageDone)
}

func envOr(e *env, key, def string) string {
	if v := strings.TrimSpace(e.getenv(key)); v != "" {
		return v
	}
	return def
}

// warnWritableConfig warns when the configuration file, which this process
// could change, sets where secrets go: whatever can make the process write
// a file could redirect the transcription key, or send a file of its
// choosing to the model. The file belongs outside the data folder,
// read-only to the process (docs/deploying.md).
func warnWritableConfig(e *env, fc *config.File) {
	keys := fc.SecretRouting()
	if fc.Path() == "" || len(keys) == 0 {
		return
	}
	// Opening for writing, without truncating or writing, changes nothing.
	f, err := os.OpenFile(fc.Path(), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	f.Close()
	e.log.Warn("mombot: the configuration file is writable by this process and sets where secrets go; make it read-only to it (see docs/deploying.md)",
		"config", fc.Path(), "settings", strings.Join(keys, ", "))
}
