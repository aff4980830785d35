package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers and sends the messages of a [Pipeline].
//
// Answer works out the reply to m, as parts to send in order. It is called
// holding the sender's lock: held is that lock, as [Locker.Lock] returned
// it, for Answer to pass on to what must run under it (the assistant);
// ctx ends when the lock is lost or a shutdown runs out of time. An error
// wrapping [ErrSkip] means the message needs no reply (too old,
// unreadable): it is done with, nothing sent. Any other error is logged and
// the message done with too; a Handler that wants the sender told sends
// its apology as the reply instead.
//
// Send sends parts to m's sender, in order, stopping at the first that
// fails, and returns how many were sent. An error wrapping [ErrTemporary]
// (the API overloaded or unreachable past the Handler's own retries) keeps
// the parts not sent for a later pass; any other error is logged and the
// message done with, since sending again would fail the same way.
//
// Both are called for one sender at a time and for different senders
// concurrently.
type Handler interface {
	Answer(ctx context.Context, held context.Context, m Message) (parts []string, err error)
	Send(ctx context.Context, m Message, parts []string) (sent int, err error)
}

// Errors a [Handler] returns.
var (
	ErrSkip      = errors.New("delivery: message skipped")
	ErrTemporary = errors.New("delivery: temporary failure")
)

// Defaults used for the zero values of [Options].
const (
	DefaultResumeEvery      = time.Minute
	DefaultShutdownLockWait = 5 * time.Second
	DefaultSendingGrace     = 15 * time.Second
)

// Timings of the calls to an Inbox.
const (
	// pushTimeout bounds the push of a message, which happens before the
	// webhook delivery is answered.
	pushTimeout = 2 * time.Second
	// callTimeout bounds each Peek, Sending, Done and Keys.
	callTimeout = 10 * time.Second
	// attempts is how many times a failed Peek or Done is tried, waiting
	// retryDelay before the second try and twice as long before each next.
	attempts   = 4
	retryDelay = 100 * time.Millisecond
)

// Options configure a [Pipeline]. The zero value means the defaults.
type Options struct {
	// Inbox keeps the messages from their acceptance to their reply. Set
	// a durable one, so that no acknowledged message is lost: a [File]
	// for one process, one on Redis for replicas. nil means a [Volatile],
	// which is NOT durable: messages accepted but not answered when the
	// process dies, or when a shutdown runs out of time, are lost.
	Inbox Inbox
	// Locker serialises each sender's messages, across processes when
	// shared. nil means a [Local].
	Locker Locker
	// MemoryFallback, when the Inbox fails to take a message, holds it in
	// this process's memory and answers it all the same, rather than
	// refusing it: it is lost if the process dies before answering it.
	// Leave it unset for an Inbox that replicas share (Redis,
	// PostgreSQL): a message answered from one replica's memory is one the
	// others cannot see and may answer again; refused, Meta delivers it
	// again once the Inbox takes it. Leave it unset for a File too, whose
	// failure (a full disk) would put acknowledged messages in memory only.
	// It suits one process whose Inbox may fail while it goes on. Once a sender has messages in memory, the sender's next ones
	// join them there until they are answered, to keep their order.
	MemoryFallback bool
	// ResumeEvery is how often the Pipeline looks in the Inbox for senders
	// with messages nobody is answering (those a replica that died left);
	// it also looks when it starts. 0 means DefaultResumeEvery.
	ResumeEvery time.Duration
	// ShutdownLockWait is how long, once a shutdown has begun, a drain
	// waits for a sender's lock another replica holds (that replica
	// answers the sender's messages). 0 means DefaultShutdownLockWait.
	ShutdownLockWait time.Duration
	// SendingGrace is how long a drain holding a sender's lock waits when
	// it finds at the head of the sender's queue a message marked by
	// [Inbox.Sending] that this process does not hold as answered: the
	// holder that marked it, which lost the lock while the store was down,
	// may have sent its reply and be about to record it. A live holder
	// tries its Done again every second, each try bounded by 10 s, so it
	// lands within about 11 s of the store's return; the grace must be
	// longer. If the message is still the head afterwards, its holder
	// died (or this process, before a restart) and it is answered again:
	// the one duplicate of a crash between a send and its Done. 0 means
	// DefaultSendingGrace.
	SendingGrace time.Duration
	// Logger receives the Pipeline's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Pipeline answers the messages accepted into its Inbox: each sender's
// one at a time and in order, holding the sender's lock, different senders
// in parallel; see the package documentation for a message's life. Create
// it with [New]; it starts at once to answer what an earlier process left
// in the Inbox. Stop it with [Pipeline.Shutdown].
type Pipeline struct {
	h    Handler
	o    Options
	log  *slog.Logger
	mem  *Volatile // the Inbox when none is configured, else the fallback
	live inflight
	// drains runs one drain per sender at a time.
	drains drains
	// pass counts the resume passes.
	pass atomic.Int64

	closing atomic.Bool
	// ctx is the context of background processing; cancel ends it when a
	// shutdown runs out of time.
	ctx    context.Context
	cancel context.CancelFunc
	// stopResume ends the periodic look for messages left; resumed is
	// closed once it has ended.
	stopResume context.CancelFunc
	resumed    chan struct{}
	stopOnce   sync.Once
	// closed is closed when a shutdown begins.
	closed chan struct{}
}

// New returns a Pipeline that answers with h, and starts it.
func New(h Handler, opts *Options) *Pipeline {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Locker == nil {
		o.Locker = &Local{}
	}
	if o.ResumeEvery <= 0 {
		o.ResumeEvery = DefaultResumeEvery
	}
	if o.ShutdownLockWait <= 0 {
		o.ShutdownLockWait = DefaultShutdownLockWait
	}
	if o.SendingGrace <= 0 {
		o.SendingGrace = DefaultSendingGrace
	}
	p := &Pipeline{h: h, o: o, log: o.Logger, mem: &Volatile{Now: o.Now}}
	if m, ok := o.Inbox.(*Volatile); ok {
		p.mem = m
	}
	if o.Inbox == nil || o.Inbox == Inbox(p.mem) {
		p.o.Inbox = p.mem
		o.Logger.Warn("delivery: no durable queue: messages accepted but not yet answered are lost if the process dies")
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.closed = make(chan struct{})
	p.drains = drains{run: p.drain}
	var resumeCtx context.Context
	resumeCtx, p.stopResume = context.WithCancel(p.ctx)
	p.resumed = make(chan struct{})
	go p.resumeLoop(resumeCtx)
	return p
}

// Accept keeps the messages of batch (one webhook delivery) for answering,
// in one push to the Inbox, and asks for a drain of their senders' queues.
// It returns one error for each message: nil once it is kept (in the
// Inbox, or in memory with MemoryFallback), one wrapping ErrDuplicate for
// a message waiting or handled already, and one wrapping ErrRefused when
// it cannot be kept, so that the delivery is refused and delivered again
// later.
func (p *Pipeline) Accept(ctx context.Context, batch ...Message) []error {
	errs := make([]error, len(batch))
	if p.closing.Load() {
		for i := range errs {
			errs[i] = fmt.Errorf("%w: shutting down", ErrRefused)
		}
		return errs
	}
	var toInbox, toMem []int // indexes in batch
	for i, m := range batch {
		switch {
		case p.live.sent(m.ID) || p.mem.Handled(m.ID):
			// This process answered it and could not record it yet (the
			// Inbox failed), or answered it from memory: not again.
			errs[i] = ErrDuplicate
		case p.o.Inbox == Inbox(p.mem) || p.mem.Has(m.Key):
			// Once a sender has messages in memory, its next ones join
			// them there until they are answered: memory is drained after
			// the Inbox, so a message pushed to the Inbox meanwhile would
			// be answered first.
			toMem = append(toMem, i)
		default:
			toInbox = append(toInbox, i)
		}
	}
	durable := make([]bool, len(batch))
	if len(toInbox) > 0 {
		// The webhook's sender waits for the answer: an Inbox that hangs
		// must not hold it up for long.
		pctx, cancel := context.WithTimeout(ctx, pushTimeout)
		dup, err := p.o.Inbox.Push(pctx, pick(batch, toInbox)...)
		cancel()
		switch {
		case err == nil:
			for j, i := range toInbox {
				if dup[j] {
					errs[i] = ErrDuplicate
				} else {
					durable[i] = true
				}
			}
		case !p.o.MemoryFallback:
			p.log.Error("delivery: queue failed; the delivery is refused for its messages to be delivered again later", "messages", len(toInbox), "err", err)
			for _, i := range toInbox {
				errs[i] = fmt.Errorf("%w: %w", ErrRefused, err)
			}
		default:
			p.log.Error("delivery: queue failed; the messages are held in this process's memory only until they are answered", "messages", len(toInbox), "err", err)
			toMem = append(toMem, toInbox...)
			slices.Sort(toMem)
		}
	}
	if len(toMem) > 0 {
		if p.closing.Load() {
			// Memory is lost with the process: they must be delivered
			// again.
			for _, i := range toMem {
				errs[i] = fmt.Errorf("%w: shutting down", ErrRefused)
			}
			toMem = nil
		}
		dup, err := p.mem.Push(ctx, pick(batch, toMem)...)
		for j, i := range toMem {
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%w: %w", ErrRefused, err)
			case dup[j]:
				errs[i] = ErrDuplicate
			}
		}
	}
	for i, m := range batch {
		if errs[i] != nil {
			continue
		}
		if !p.drains.add(m.Key) && !durable[i] {
			// Shut down meanwhile: a durable message waits for the next
			// start; one in memory would be lost.
			errs[i] = fmt.Errorf("%w: shutting down", ErrRefused)
		}
	}
	return errs
}

// pick returns the messages of batch at the indexes.
func pick(batch []Message, indexes []int) []Message {
	ms := make([]Message, len(indexes))
	for j, i := range indexes {
		ms[j] = batch[i]
	}
	return ms
}

// Shutdown stops accepting messages (Accept refuses them) and waits for
// the drains under way, and those asked for, to end. A drain ends once its
// sender's queue is empty, or earlier when the Inbox fails, the sender's
// lock is lost, or the lock is held by another replica (which answers the
// sender's messages; Shutdown waits for such a lock ShutdownLockWait
// only); a drain whose reply is sent but not recorded (Done failing) keeps
// trying until ctx ends. What is left in a durable Inbox waits for the next start or
// another replica, and the number of senders with messages left is
// logged. If ctx ends first, Shutdown cancels the handling still running,
// waits for it to return, and returns an error wrapping ctx's. It also
// returns an error when messages held in memory only are lost. Call it
// before closing what the Handler, the Inbox and the Locker use. Calling
// it again is harmless.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	p.closing.Store(true)
	p.stopOnce.Do(func() {
		close(p.closed)
		p.stopResume()
	})
	// wait waits for done, or for ctx, after which it stops the handling
	// still running and then waits for done.
	var cut error
	wait := func(done <-chan struct{}) {
		select {
		case <-done:
		case <-ctx.Done():
			cut = ctx.Err()
			p.cancel()
			<-done
		}
	}
	// The drains the resume loop asks for are asked for before none may be.
	wait(p.resumed)
	p.drains.close()
	wait(p.drains.done())
	p.cancel()
	lost := p.left()
	if cut != nil {
		return fmt.Errorf("delivery: shutdown: %w", cut)
	}
	return lost
}

// left logs what remains once the drains have stopped, and returns an
// error when messages held in memory only are lost with it.
func (p *Pipeline) left() error {
	var lost error
	if n := p.mem.Len(); n > 0 {
		p.log.Error("delivery: messages held in memory were not answered and are lost", "messages", n)
		lost = fmt.Errorf("delivery: shutdown: %d messages held in memory were not answered and are lost", n)
	}
	if p.o.Inbox == Inbox(p.mem) {
		return lost
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	keys, err := p.o.Inbox.Keys(ctx)
	if err != nil {
		p.log.Warn("delivery: listing the senders with messages left failed", "err", err)
		return lost
	}
	if len(keys) > 0 {
		p.log.Warn("delivery: messages left queued in the inbox, to be answered at the next start or by another replica", "senders", len(keys))
	}
	return lost
}

// inboxes returns the inboxes a sender's messages may be in, in the order
// they are drained: the configured Inbox, whose messages came first, then
// the messages held in memory because it failed to take them (and those
// that came after them).
func (p *Pipeline) inboxes() []Inbox {
	if p.o.Inbox == Inbox(p.mem) {
		return []Inbox{p.mem}
	}
	return []Inbox{p.o.Inbox, p.mem}
}

// resumeLoop asks for a drain of every sender with messages waiting now
// and every ResumeEvery until ctx is done: after a restart, and when a
// replica that took a sender's messages died before answering them. The
// first pass is not cut short by ctx, so that a Shutdown right after New
// still answers what an earlier process left.
func (p *Pipeline) resumeLoop(ctx context.Context) {
	defer close(p.resumed)
	if n := p.resume(p.ctx); n > 0 {
		p.log.Info("delivery: answering the messages left queued in the inbox", "senders", n)
	}
	tick := time.NewTicker(p.o.ResumeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.resume(ctx)
	}
}

// resume asks for a drain of every sender with messages waiting and
// returns how many there are.
func (p *Pipeline) resume(ctx context.Context) int {
	p.pass.Add(1)
	p.live.prune(p.o.Now())
	n := 0
	for _, q := range p.inboxes() {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		keys, err := q.Keys(cctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("delivery: listing the senders with messages waiting failed; trying again later", "err", err)
			}
			continue
		}
		for _, k := range keys {
			if p.drains.add(k) {
				n++
			}
		}
	}
	return n
}

// retry calls op, each time with a timeout, until it succeeds, it has
// failed attempts times, or the Pipeline stops.
func (p *Pipeline) retry(log *slog.Logger, what string, ctx context.Context, op func(ctx context.Context) error) error {
	delay := retryDelay
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := op(cctx)
		cancel()
		if err == nil || attempt == attempts {
			return err
		}
		log.Warn("delivery: inbox failed; trying again", "op", what, "attempt", attempt, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay *= 2
	}
}

// drains runs run(key) in the background, one run per key at a time and
// different keys in parallel. A request for a key whose run is under way
// makes it run once more when it ends, so that what was queued meanwhile
// does not wait for the next request.
type drains struct {
	run func(key string)

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
		d.run(key)
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
