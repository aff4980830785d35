package main

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// redisProc is a redis-server of the test's own, which it may stop and
// start again on the same port.
type redisProc struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

// startRedis starts a redis-server without persistence on a free port, or
// skips the test when there is no redis-server on PATH.
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH: the test needs a Redis of its own to stop and start")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{t: t, port: ln.Addr().(*net.TCPAddr).Port}
	ln.Close()
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start starts the server and waits until it accepts connections.
func (r *redisProc) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.t.TempDir())
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("redis-server did not start on port %d", r.port)
}

// kill stops the server at once, as a crash would.
func (r *redisProc) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

// waitHealth polls /healthz until its body starts with prefix.
func waitHealth(t *testing.T, p *servedProc, prefix string) string {
	t.Helper()
	var body string
	for range 100 {
		var code int
		code, body = p.get("/healthz")
		if code == 200 && strings.HasPrefix(body, prefix) {
			return body
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("/healthz never said %q; last: %q", prefix, body)
	return ""
}

// waitLogs polls p's log until it holds every one of want or timeout
// passes, and returns the log and whether it does.
func waitLogs(p *servedProc, timeout time.Duration, want ...string) (string, bool) {
	has := func(logs string) bool {
		for _, w := range want {
			if !strings.Contains(logs, w) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(timeout)
	for {
		logs := p.logs.String()
		if has(logs) {
			return logs, true
		}
		if time.Now().After(deadline) {
			return logs, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// erinSays returns a func that delivers a message from Erin to p, marked
// with key, waits for its reply and returns the markers of the user
// messages the model was sent for it: what history it saw.
func erinSays(t *testing.T, f *serveFixture, p *servedProc) func(key string) []string {
	return func(key string) []string {
		t.Helper()
		n := len(f.graph.Sent()) + 1
		body := webhookPayload(inMessage{From: erinWaID, ID: fmt.Sprintf("wamid.down.%d.%s", time.Now().UnixNano(), key), Text: "[k=" + key + "] hi"})
		if code := p.deliver(body); code != 200 {
			t.Fatalf("delivery of %s: %d", key, code)
		}
		sent := waitSent(t, f.graph, n, 30*time.Second)
		if got := sent[n-1].Body; got != "re "+key {
			t.Fatalf("reply %q, want %q", got, "re "+key)
		}
		reqs := f.claude.Requests()
		return markers(reqs[len(reqs)-1].Params.Messages)
	}
}

// refusedWhileDown delivers a message from Erin marked key to p, which
// must refuse it (503: Meta delivers it again later) and send nothing, and
// returns a func that delivers it again, as Meta does, once the store is
// back: it is answered, once.
func refusedWhileDown(t *testing.T, f *serveFixture, p *servedProc, key string) func() {
	t.Helper()
	body := webhookPayload(inMessage{From: erinWaID, ID: fmt.Sprintf("wamid.down.%d.%s", time.Now().UnixNano(), key), Text: "[k=" + key + "] hi"})
	before := len(f.graph.Sent())
	if code := p.deliver(body); code != 503 {
		t.Fatalf("delivery of %s with the store down: %d, want 503 for Meta to deliver it again", key, code)
	}
	return func() {
		t.Helper()
		if code := p.deliver(body); code != 200 {
			t.Fatalf("redelivery of %s with the store back: %d", key, code)
		}
		sent := waitSent(t, f.graph, before+1, 30*time.Second)
		if got := sent[before].Body; got != "re "+key {
			t.Fatalf("reply %q, want %q", got, "re "+key)
		}
		if code := p.deliver(body); code != 200 {
			t.Fatalf("a third delivery of %s: %d", key, code)
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(f.graph.Sent()); n != before+1 {
			t.Fatalf("%d replies after %s was delivered again, want %d: answered twice", n, key, before+1)
		}
	}
}

// TestServeRedisDown: when the Redis behind the server goes down, the
// server refuses WhatsApp's messages (503) rather than answer from its own
// memory what another replica cannot see, and /healthz says it is
// degraded; when Redis is back, a message delivered again is answered,
// and memory works again without a restart.
func TestServeRedisDown(t *testing.T) {
	r := startRedis(t)
	f := newServeFixture(t, r.url()+"?prefix=mombot-e2e:", map[string]string{erin: "Erin"})
	echoMarkers(f.claude, 0)
	p := f.start()
	say := erinSays(t, f, p)
	waitHealth(t, p, "ok")
	say("a1")
	if got := say("a2"); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("with Redis up the model saw %q, want the first turn too", got)
	}

	r.kill()
	body := waitHealth(t, p, "degraded")
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, fmt.Sprint(r.port)) {
		t.Errorf("/healthz shows the internal error to the public: %q", body)
	}
	// The child's stderr is copied into p.logs asynchronously: the line
	// may arrive after /healthz has answered.
	if logs, ok := waitLogs(p, 10*time.Second, "health check failed", "redis"); !ok {
		t.Errorf("the log does not say what is down:\n%s", logs)
	}
	again := refusedWhileDown(t, f, p, "b1")

	r.start()
	waitHealth(t, p, "ok")
	again()
	say("c1")
	// The restarted Redis kept nothing from before the outage (no
	// persistence), but b1, answered once it was back, and the turns
	// since are remembered.
	if got := say("c2"); !slices.Equal(got, []string{"b1", "c1", "c2"}) {
		t.Errorf("with Redis back the model saw %q, want b1 and c1 too", got)
	}
	p.stop()
	if logs := p.logs.String(); !strings.Contains(logs, "level=ERROR") {
		t.Errorf("the outage was not logged:\n%s", logs)
	}
}

// TestServeStartsWithRedisDown: a server (re)started while its Redis is
// down starts anyway, refuses WhatsApp's messages for Meta to deliver them
// again and says it is degraded; once Redis answers, a message delivered
// again is answered, and memory works without a restart.
func TestServeStartsWithRedisDown(t *testing.T) {
	r := startRedis(t)
	f := newServeFixture(t, r.url()+"?prefix=mombot-e2e:", map[string]string{erin: "Erin"})
	echoMarkers(f.claude, 0)
	r.kill()
	p := f.start()
	waitHealth(t, p, "degraded")
	say := erinSays(t, f, p)
	again := refusedWhileDown(t, f, p, "d1")
	r.start()
	waitHealth(t, p, "ok")
	again()
	say("e1")
	if got := say("e2"); !slices.Equal(got, []string{"d1", "e1", "e2"}) {
		t.Errorf("with Redis up the model saw %q, want d1 and e1 too", got)
	}
	p.stop()
}
