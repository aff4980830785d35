// Package metrics is mombot's Prometheus instrumentation: the counters,
// histograms and gauges a host scrapes, and the adapters that feed them
// from the outside of the domain packages, so that those keep no metrics
// code on their paths:
//
//   - [Metrics] implements whatsapp.Observer (webhooks received and
//     refused, messages skipped, Graph send attempts, retries and replies
//     given up on);
//   - [Metrics.Replied] records each reply's time and counts it answered or failed;
//   - [Metrics.Transport] wraps the Anthropic API's HTTP transport: calls by
//     status, tokens by kind from each response's usage;
//   - [Metrics.Store] wraps a conversation store: latency and errors by
//     operation, with everything the store does passed through;
//   - [Metrics.InboxDepth] reports the senders with messages waiting.
//
// No metric has a phone number, a name or a message's text as a label:
// every label value is one of a few fixed words or an HTTP status.
//
// [Metrics.Handler] serves them in the Prometheus text format, and
// [Metrics.Serve] serves that on an address of its own: mombot serve
// offers it there (--metrics-listen), never on the public webhook port,
// which [SharesPort] tells apart.
package metrics
