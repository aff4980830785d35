package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// leaseReleaseTimeout bounds the release of a lease, which runs even when
// the holder's context has ended.
const leaseReleaseTimeout = 5 * time.Second

// Lease is the part of a [Locker] shared by the stores whose locks are
// leases: a record holding a token that lasts a TTL unless renewed. A
// store provides its three round trips; Lease takes, renews and releases
// with them. Its fields must be set before the first Lock and not changed
// after.
type Lease struct {
	// Name starts the errors and log messages: the store, such as "redis".
	Name string
	// TTL is how long a lease lasts from its taking or its last renewal.
	TTL time.Duration
	// WaitMin and WaitMax bound the waits between attempts to take a
	// held lease: from WaitMin, doubling up to WaitMax, each shortened by
	// a random part so that waiters spread out.
	WaitMin, WaitMax time.Duration
	// Log reports lost leases and failed renewals and releases.
	Log *slog.Logger
	// Take tries to take key for token for a TTL, and reports whether it
	// did: false means another holds it.
	Take func(ctx context.Context, key, token string) (bool, error)
	// Renew extends by a TTL the lease on key if token still holds it,
	// and reports whether it did.
	Renew func(ctx context.Context, key, token string) (bool, error)
	// Release ends the lease on key if token still holds it.
	Release func(ctx context.Context, key, token string) error
}

// Lock takes the lease on key for token, waiting while another holds it
// until ctx is done. It returns a func that releases the lease; calling it
// more than once is harmless. It fails, taking nothing, when ctx ends first
// (the error wraps ctx.Err()) or when Take fails; a Take that failed may
// have been applied all the same, so its token's lease is released in the
// background once the store answers.
//
// The lease is renewed every TTL/3 until released. held is done once the
// lease is no longer held: at unlock, or, with the cause ErrLockLost, when
// a renewal finds it taken by another or run out, or when the renewals
// have failed for so long that it may run out before the next one (about
// two thirds of the TTL). The loss is logged. held does not end with ctx.
func (l *Lease) Lock(ctx context.Context, key, token string) (held context.Context, unlock func(), err error) {
	wait := l.WaitMin
	var taken time.Time
	for {
		taken = time.Now() // the lease lasts a TTL from no earlier than this
		ok, err := l.Take(ctx, key, token)
		if err != nil {
			// The take may have been applied and its answer lost (the
			// store crashed, a connection broke): the lease would then
			// hold the sender for a TTL for nobody.
			go l.releaseLost(key, token)
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			return nil, nil, fmt.Errorf("%s: lock: %w", l.Name, err)
		}
		if ok {
			break
		}
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("%s: lock: %w", l.Name, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, l.WaitMax)
	}

	held, lose := context.WithCancelCause(context.Background())
	renewCtx, stop := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		l.renew(renewCtx, key, token, taken.Add(l.TTL), lose)
	}()
	var once sync.Once
	return held, func() {
		once.Do(func() {
			stop()
			<-renewed
			lose(nil)
			ctx, cancel := context.WithTimeout(context.Background(), leaseReleaseTimeout)
			defer cancel()
			if err := l.Release(ctx, key, token); err != nil {
				// The lease runs out on its own after the TTL.
				l.Log.Warn(l.Name+": release of a lock failed", "err", err)
			}
		})
	}, nil
}

// releaseLost releases the lease token may hold on key after a take that
// failed, trying again every second (or TTL/3, if shorter) until a
// release works or the lease has run out on its own.
func (l *Lease) releaseLost(key, token string) {
	every := min(time.Second, l.TTL/3)
	for deadline := time.Now().Add(l.TTL); time.Now().Before(deadline); time.Sleep(every) {
		ctx, cancel := context.WithTimeout(context.Background(), min(leaseReleaseTimeout, l.TTL))
		err := l.Release(ctx, key, token)
		cancel()
		if err == nil {
			return
		}
	}
}

// renew extends the lease every TTL/3 until ctx is done or the lease is
// lost, in which case it calls lose with ErrLockLost. The lease is known
// to hold until expires, which each renewal moves on.
func (l *Lease) renew(ctx context.Context, key, token string, expires time.Time, lose context.CancelCauseFunc) {
	every := l.TTL / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A renewal that hangs gives up halfway to the next tick, so
		// that after two failed ones the holder still learns of the loss
		// a sixth of the TTL before the lease may run out.
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every/2)
		ok, err := l.Renew(rctx, key, token)
		cancel()
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return // released meanwhile
		case err != nil && time.Until(expires) <= every:
			// The next renewal would come too late to be sure. Tell
			// the holder first: once the loss is logged, it is known.
			lose(ErrLockLost)
			l.Log.Error(l.Name+": a lock could not be renewed before it expires; its holder is told it lost it", "err", err)
			return
		case err != nil:
			// Try again at the next tick: the lease holds until expires.
			l.Log.Warn(l.Name+": renewal of a lock failed", "err", err)
		case !ok:
			lose(ErrLockLost)
			l.Log.Error(l.Name + ": a lock expired while held and may have passed to another holder; its holder is told it lost it")
			return
		default:
			expires = sent.Add(l.TTL)
		}
	}
}
