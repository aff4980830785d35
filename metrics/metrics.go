package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds mombot's metrics in a registry of its own. It is safe for
// concurrent use. Create it with [New].
type Metrics struct {
	reg *prometheus.Registry

	webhooks     *prometheus.CounterVec
	messages     *prometheus.CounterVec
	replySeconds prometheus.Histogram
	apiRequests  *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	graphSends   *prometheus.CounterVec
	graphRetries prometheus.Counter
	notSent      *prometheus.CounterVec
	storeSeconds *prometheus.HistogramVec
	storeErrors  *prometheus.CounterVec
}

// Token kinds, the values of mombot_anthropic_tokens_total's kind label.
const (
	TokensInput        = "input"
	TokensCacheWrite5m = "cache_write_5m"
	TokensCacheWrite1h = "cache_write_1h"
	TokensCacheRead    = "cache_read"
	TokensOutput       = "output"
)

// New returns the metrics, with the Go runtime's and the process's
// collectors registered next to them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_webhooks_total",
			Help: "Webhook deliveries (POST /webhook) by result: received, or refused with the reason.",
		}, []string{"result", "reason"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_messages_total",
			Help: "Messages by what the person got: answered (reason not_saved when the answer says its turn was not saved), apologized (an apology instead of an answer), not_sent (the reply could not be sent), skipped (no reply needed, with the reason), refused (not kept, for Meta to deliver again).",
		}, []string{"outcome", "reason"}),
		replySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mombot_reply_duration_seconds",
			Help:    "Time the assistant takes to reply to a message, API calls and tools included.",
			Buckets: []float64{0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300},
		}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_anthropic_requests_total",
			Help: "HTTP requests to the Anthropic API, each retry counted, by status code (\"error\" for no answer).",
		}, []string{"status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_anthropic_tokens_total",
			Help: "Tokens the Anthropic API reported in its usage, by kind: input, cache_write_5m, cache_write_1h, cache_read, output.",
		}, []string{"kind"}),
		graphSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_graph_send_attempts_total",
			Help: "Attempts to send a reply part through the WhatsApp Graph API, by result (sent, failed).",
		}, []string{"result"}),
		graphRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mombot_graph_send_retries_total",
			Help: "Failed Graph API send attempts followed by another attempt.",
		}),
		notSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_graph_replies_not_sent_total",
			Help: "Reply parts given up on after the retries, by failure: permanent, or temporary (the message stays in the inbox).",
		}, []string{"failure"}),
		storeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mombot_store_operation_duration_seconds",
			Help:    "Store operations' latency, by operation and kind of record.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"op", "kind"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mombot_store_errors_total",
			Help: "Store operations that failed, by operation and kind of record (a record not found or changed meanwhile is not a failure).",
		}, []string{"op", "kind"}),
	}
	m.reg.MustRegister(m.webhooks, m.messages, m.replySeconds, m.apiRequests, m.tokens,
		m.graphSends, m.graphRetries, m.notSent, m.storeSeconds, m.storeErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Series that exist from the start, so that a rate() has a zero to
	// begin from.
	m.webhooks.WithLabelValues("received", "")
	for _, o := range []string{OutcomeAnswered, OutcomeApologized, OutcomeNotSent, OutcomeRefused} {
		m.messages.WithLabelValues(o, "")
	}
	for _, k := range []string{TokensInput, TokensCacheWrite5m, TokensCacheWrite1h, TokensCacheRead, TokensOutput} {
		m.tokens.WithLabelValues(k)
	}
	m.graphSends.WithLabelValues("sent")
	m.graphSends.WithLabelValues("failed")
	return m
}

// Registry returns the registry the metrics are in, to add others.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Webhook implements whatsapp.Observer.
func (m *Metrics) Webhook(refused string) {
	if refused == "" {
		m.webhooks.WithLabelValues("received", "").Inc()
		return
	}
	m.webhooks.WithLabelValues("refused", refused).Inc()
}

// MessageSkipped implements whatsapp.Observer.
func (m *Metrics) MessageSkipped(reason string) {
	m.messages.WithLabelValues(OutcomeSkipped, reason).Inc()
}

// SendAttempt implements whatsapp.Observer.
func (m *Metrics) SendAttempt(sent, retry bool) {
	if sent {
		m.graphSends.WithLabelValues("sent").Inc()
		return
	}
	m.graphSends.WithLabelValues("failed").Inc()
	if retry {
		m.graphRetries.Inc()
	}
}

// ReplyNotSent implements whatsapp.Observer.
func (m *Metrics) ReplyNotSent(permanent bool) {
	if permanent {
		m.notSent.WithLabelValues("permanent").Inc()
		return
	}
	m.notSent.WithLabelValues("temporary").Inc()
}

// What a person got for a message, as mombot_messages_total's outcome.
const (
	// OutcomeAnswered: the answer was sent; with ReasonNotSaved, it said
	// that its turn could not be saved.
	OutcomeAnswered = "answered"
	// OutcomeApologized: an apology was sent instead of an answer.
	OutcomeApologized = "apologized"
	// OutcomeNotSent: the reply could not be sent, for good.
	OutcomeNotSent = "not_sent"
	// OutcomeSkipped: no reply was needed (MessageSkipped's reasons).
	OutcomeSkipped = "skipped"
	// OutcomeRefused: the message was not kept and its delivery refused,
	// for Meta to deliver it again (MessageRefused).
	OutcomeRefused = "refused"
	// ReasonNotSaved is the reason of an answer whose turn was not saved.
	ReasonNotSaved = "not_saved"
)

// ReplyTime records a reply the assistant took d to make.
func (m *Metrics) ReplyTime(d time.Duration) {
	m.replySeconds.Observe(d.Seconds())
}

// Message counts a message by what the person got: one of the Outcome
// constants, and a reason.
func (m *Metrics) Message(outcome, reason string) {
	m.messages.WithLabelValues(outcome, reason).Inc()
}

// MessageRefused implements whatsapp.Observer.
func (m *Metrics) MessageRefused() {
	m.messages.WithLabelValues(OutcomeRefused, "").Inc()
}

// Inbox is what InboxDepth reads of a delivery.Inbox: Keys returns the
// senders with messages waiting. It must be safe for concurrent use.
type Inbox interface {
	Keys(ctx context.Context) ([]string, error)
}

// InboxDepth reports, as mombot_inbox_senders, the number of senders
// with messages waiting in inbox, as its Keys says at each scrape
// (bounded by a short timeout); a failing Keys reports nothing.
func (m *Metrics) InboxDepth(inbox Inbox) {
	m.reg.MustRegister(&inboxCollector{inbox: inbox, desc: prometheus.NewDesc(
		"mombot_inbox_senders", "Senders with messages waiting in the inbox to be answered.", nil, nil)})
}

type inboxCollector struct {
	inbox Inbox
	desc  *prometheus.Desc
}

func (c *inboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *inboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	keys, err := c.inbox.Keys(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(len(keys)))
}
