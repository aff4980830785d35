package whatsapp

import (
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/mombot/mombot/phone"
)

// drains runs run(key) in the background, one run per key at a time and
// different keys in parallel. A request for a key whose run is under way
// makes it run once more when it ends, so that what was queued meanwhile
// does not wait for the next request. A panic in run is logged and ends
// that run only.
type drains struct {
	run func(key string)
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	again  map[string]bool // keys being run; true if asked again meanwhile
	wg     sync.WaitGroup
}

// add asks for a run of key. It returns false, and does nothing, once
// close has been called.
func (d *drains) add(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.again == nil {
		d.again = map[string]bool{}
	}
	if _, running := d.again[key]; running {
		d.again[key] = true
		return true
	}
	d.again[key] = false
	d.wg.Add(1)
	go d.loop(key)
	return true
}

func (d *drains) loop(key string) {
	defer d.wg.Done()
	for {
		d.runSafely(key)
		d.mu.Lock()
		if d.again[key] {
			d.again[key] = false
			d.mu.Unlock()
			continue
		}
		delete(d.again, key)
		d.mu.Unlock()
		return
	}
}

// runSafely runs run(key), turning a panic into a log entry: one bad run
// must not take the server, and every queued message, down with it.
func (d *drains) runSafely(key string) {
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("whatsapp: panic while draining a sender's queue; what is queued stays for the next pass",
				"from", phone.Mask(key), "panic", p, "stack", string(debug.Stack()))
		}
	}()
	d.run(key)
}

// close stops accepting requests; runs under way, and those asked for
// already, still happen.
func (d *drains) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// done returns a channel closed when every run has ended.
func (d *drains) done() <-chan struct{} {
	ch := make(chan struct{})
	go func() { d.wg.Wait(); close(ch) }()
	return ch
}
