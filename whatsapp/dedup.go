package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mombot/mombot/internal/atomicfile"
)

// Dedup remembers the message ids (wamids) already handled, because Meta
// delivers a webhook again when it is unsure the first delivery arrived,
// for up to seven days.
//
// Handled reports whether id was recorded as handled. MarkHandled records
// id as handled at time at; recording an id again is harmless. The Server
// records a message only once its reply is sent (or it was deliberately
// skipped), so that a process that dies while answering leaves it to be
// answered again rather than skipped.
//
// Check and record are two steps, not one atomic check-and-set: the Server
// calls them for one sender's messages one at a time, holding the sender's
// [delivery.Locker] lock, and a message id always comes from the same sender, so two
// handlers never race on one id. It also calls Handled, without the lock,
// before queueing a delivery, to spare queueing a redelivery.
//
// Implementations must be safe for concurrent use; one shared by several
// processes serves replicas. On error Handled's answer is meaningless: the
// Server logs the error and answers the message, preferring a rare second
// answer to silence.
type Dedup interface {
	Handled(ctx context.Context, id string) (bool, error)
	MarkHandled(ctx context.Context, id string, at time.Time) error
}

// DedupTTL is how long a DedupFile remembers an id: Meta stops redelivering
// a webhook after seven days.
const DedupTTL = 7 * 24 * time.Hour

// DedupFile is a [Dedup] kept in a JSON file, so that it survives restarts:
//
//	{"seen": {"wamid.HBgL...": "2026-02-24T10:35:00Z", ...}}
//
// Each new id rewrites the file atomically (a temporary file in the same
// folder, fsync, rename, fsync of the folder; mode 0600), after dropping
// the ids older than the TTL. It is meant for one process; several
// replicas need a shared Dedup.
type DedupFile struct {
	path string
	ttl  time.Duration
	now  func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time
	// unsaved is set while seen holds ids the file does not.
	unsaved bool
}

var _ Dedup = (*DedupFile)(nil)

// DedupFileOptions configure [OpenDedupFile]. The zero value is the
// defaults.
type DedupFileOptions struct {
	// TTL is how long an id is remembered; zero means DedupTTL.
	TTL time.Duration
	// Now is the clock that expires ids; nil means time.Now.
	Now func() time.Time
	// Logger reports a damaged file; nil means slog.Default().
	Logger *slog.Logger
}

type dedupJSON struct {
	Seen map[string]time.Time `json:"seen"`
}

// OpenDedupFile loads the ids kept at path, a missing file being an empty
// one. A file that cannot be parsed is renamed aside (path + ".corrupt-" and
// a time stamp), logged, and replaced by an empty one, so that a damaged
// file does not stop the server; an unreadable one is an error.
func OpenDedupFile(path string, opts *DedupFileOptions) (*DedupFile, error) {
	var o DedupFileOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = DedupTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := &DedupFile{path: path, ttl: o.TTL, now: o.Now, seen: map[string]time.Time{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("whatsapp: open dedup file: %w", err)
	}
	var f dedupJSON
	if err := json.Unmarshal(data, &f); err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, o.Now().UnixNano())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("whatsapp: dedup file is damaged (%v) and cannot be moved aside: %w", err, rerr)
		}
		o.Logger.Warn("whatsapp: dedup file is damaged; moved aside, starting empty",
			"path", path, "moved_to", aside, "err", err)
		return d, nil
	}
	cutoff := o.Now().Add(-d.ttl)
	for id, at := range f.Seen {
		if id != "" && at.After(cutoff) {
			d.seen[id] = at
		}
	}
	return d, nil
}

// Path returns the file's path.
func (d *DedupFile) Path() string { return d.path }

// Handled implements [Dedup]: whether id was recorded less than the TTL
// ago.
func (d *DedupFile) Handled(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.seen[id]
	return ok && d.now().Sub(at) < d.ttl, nil
}

// MarkHandled implements [Dedup]. If the file cannot be written,
// MarkHandled returns the error but remembers id all the same, so that
// this process does not answer the message again; the next MarkHandled, of
// any id, writes the file again. An id recorded already is left as it is,
// without a write unless an earlier one failed.
func (d *DedupFile) MarkHandled(ctx context.Context, id string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := d.seen[id]; ok && at.Sub(prev) < d.ttl && !d.unsaved {
		return nil
	}
	cutoff := at.Add(-d.ttl)
	for k, t := range d.seen {
		if !t.After(cutoff) {
			delete(d.seen, k)
		}
	}
	if prev, ok := d.seen[id]; !ok || at.Sub(prev) >= d.ttl {
		d.seen[id] = at.UTC()
	}
	data, err := json.Marshal(dedupJSON{Seen: d.seen})
	if err == nil {
		err = atomicfile.WriteFile(d.path, data)
	}
	d.unsaved = err != nil
	if err != nil {
		return fmt.Errorf("whatsapp: save dedup file: %w", err)
	}
	return nil
}
