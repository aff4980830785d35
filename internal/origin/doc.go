// Package origin keeps a request's credentials with the origin they were
// sent to. An origin is a URL's scheme, host and port (RFC 6454), the
// default port written out, so that "https://graph.facebook.com" and
// "https://graph.facebook.com:443" are one origin and
// "http://127.0.0.1:8080" and "http://127.0.0.1:9090" two.
//
// [Client] wraps an *http.Client so that a redirect to another origin
// carries no Authorization, Proxy-Authorization or Cookie header. The
// standard client drops them only for another domain, and keeps them for
// the same host on another port or over http after https; here a token
// follows a redirect only where the first request went. [Loopback] tells
// whether a host is this machine's, where plain http leaves nothing on a
// network.
//
// The package uses the standard library only; the WhatsApp client and the
// transcription client share it, so that the rule is kept once.
package origin
