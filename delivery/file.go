package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mombot/mombot/internal/atomicfile"
)

// File is a durable [Inbox] kept in one JSON file next to the
// conversations: the messages waiting for their reply, and the ids of
// those handled in the last [HandledFor] with their sender.
//
//	{"queues": {"+16505551234": [{"id": "wamid.HBgL...", "key": "+16505551234", "body": {...}}]},
//	 "handled": {"wamid.HBgL...": 1771929300},
//	 "senders": {"wamid.HBgL...": "+16505551234"}}
//
// A handled id's value is when it was handled, in Unix seconds: a week of
// a family's ids stays a few tens of kilobytes, written with every change.
//
// Every Push, Done and Erase rewrites the file atomically (a temporary file
// in the same folder, fsync, rename, fsync of the folder; mode 0600) before
// it returns, so a message pushed is on disk, and Done's removal and record
// are one write: the file holds a message or its id, never both and never
// neither. Ids older than HandledFor are dropped at each write. When a
// write fails, the File is left as it was and the error returned.
//
// A File is safe for concurrent use, also by several processes (mombot
// serve and mombot erase): each call holds an advisory lock on path +
// ".lock" (flock(2)) and reads the file again when another process changed
// it.
type File struct {
	path string
	now  func() time.Time
	log  *slog.Logger

	mu      sync.Mutex
	lock    *os.File // path + ".lock", opened at the first call
	stamp   stamp    // of the file as last read or written
	queues  map[string][]json.RawMessage
	handled map[string]time.Time
	senders map[string]string
}

// stamp identifies a version of the file: a rename puts a new inode in
// its place.
type stamp struct {
	ino  uint64
	size int64
	mod  time.Time
}

var _ Inbox = (*File)(nil)

// FileOptions configure [OpenFile]. The zero value is the defaults.
type FileOptions struct {
	// Now is the clock that ages handled ids and names a damaged file
	// moved aside; nil means time.Now.
	Now func() time.Time
	// Logger reports a damaged file; nil means slog.Default().
	Logger *slog.Logger
}

type fileJSON struct {
	Queues  map[string][]json.RawMessage `json:"queues"`
	Handled map[string]int64             `json:"handled,omitempty"`
	Senders map[string]string            `json:"senders,omitempty"`
}

// OpenFile opens the inbox kept at path, a missing file being an empty
// inbox. A file that cannot be parsed is renamed aside (path + ".corrupt-"
// and a time stamp), logged, and replaced by an empty inbox, so that a
// damaged file does not stop the server and can still be read by hand; an
// unreadable one is an error. A message in it that cannot be read is
// dropped and logged. Close the File to release its lock file.
func OpenFile(path string, opts *FileOptions) (*File, error) {
	var o FileOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	f := &File{path: path, now: o.Now, log: o.Logger}
	err := f.locked(func() error {
		// Writers hold the lock, so the temporary files found now are
		// those of saves killed mid-write: remove them.
		if n, err := atomicfile.RemoveTemps(path); err != nil {
			return fmt.Errorf("remove temporary files: %w", err)
		} else if n > 0 {
			o.Logger.Info("delivery: removed temporary files left by interrupted saves", "path", path, "count", n)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		// No folder yet: an empty inbox, whose calls fail until the
		// folder is made.
		return f, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delivery: open inbox file: %w", err)
	}
	return f, nil
}

// Close releases the File's lock file. A File closed is not used again.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lock == nil {
		return nil
	}
	err := f.lock.Close()
	f.lock = nil
	return err
}

// locked runs fn holding f.mu and the lock file, having read the file
// again if another process changed it.
func (f *File) locked(fn func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lock == nil {
		lock, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return fmt.Errorf("delivery: inbox lock: %w", err)
		}
		f.lock = lock
	}
	// Go's signal handlers restart an interrupted flock(2).
	if err := syscall.Flock(int(f.lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.lock.Name(), err)
	}
	defer syscall.Flock(int(f.lock.Fd()), syscall.LOCK_UN)
	if st, err := statFile(f.path); err != nil {
		return err
	} else if f.queues == nil || st != f.stamp {
		if err := f.load(); err != nil {
			return err
		}
	}
	return fn()
}

// statFile returns the stamp of the file at path, the zero stamp when it
// is missing.
func statFile(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	st := stamp{size: fi.Size(), mod: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}

// load reads the file into f; the lock is held.
func (f *File) load() error {
	st, err := statFile(f.path)
	if err != nil {
		return err
	}
	var data fileJSON
	if err := readJSON(f.path, &data, f.now, f.log); err != nil {
		return err
	}
	f.queues, f.handled, f.senders = map[string][]json.RawMessage{}, map[string]time.Time{}, map[string]string{}
	cutoff := f.now().Add(-HandledFor)
	for id, sec := range data.Handled {
		if at := time.Unix(sec, 0).UTC(); id != "" && at.After(cutoff) {
			f.handled[id] = at
			if k := data.Senders[id]; k != "" {
				f.senders[id] = k
			}
		}
	}
	dropped := 0
	for key, items := range data.Queues {
		for _, item := range items {
			var m Message
			if err := m.UnmarshalJSON(item); err != nil || m.Key != key {
				dropped++
				continue
			}
			b, _ := m.MarshalJSON()
			f.queues[key] = append(f.queues[key], b)
		}
	}
	if dropped > 0 {
		f.log.Error("delivery: unreadable messages in the inbox file dropped", "path", f.path, "dropped", dropped)
	}
	f.stamp = st
	return nil
}

// readJSON reads the JSON file at path into v: nothing when it is missing;
// a damaged one is moved aside and logged.
func readJSON(path string, v any, now func() time.Time, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, now().UnixNano())
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("%s is damaged (%v) and cannot be moved aside: %w", path, err, rerr)
		}
		log.Error("delivery: inbox file is damaged; moved aside, starting empty: the messages in it are not answered",
			"path", path, "moved_to", aside, "err", err)
	}
	return nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Push implements [Inbox]: one write for the batch.
func (f *File) Push(ctx context.Context, batch ...Message) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	items := make([][]byte, len(batch))
	for i, m := range batch {
		item, err := m.MarshalJSON()
		if err != nil {
			return nil, err
		}
		items[i] = item
	}
	dup := make([]bool, len(batch))
	err := f.locked(func() error {
		prev := map[string][]json.RawMessage{}
		for i, m := range batch {
			if f.waitingOrHandled(m.ID) {
				dup[i] = true
				continue
			}
			q := f.queues[m.Key]
			if _, ok := prev[m.Key]; !ok {
				// Appending to a copy leaves the queue as it was for a
				// failed save to restore.
				prev[m.Key] = q
				q = q[:len(q):len(q)]
			}
			f.queues[m.Key] = append(q, items[i])
		}
		if len(prev) == 0 {
			return nil
		}
		if err := f.save(); err != nil {
			for key, items := range prev {
				if len(items) == 0 {
					delete(f.queues, key)
				} else {
					f.queues[key] = items
				}
			}
			return fmt.Errorf("delivery: inbox push: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dup, nil
}

// waitingOrHandled reports whether id is queued or was handled in the last
// HandledFor; the lock is held.
func (f *File) waitingOrHandled(id string) bool {
	if at, ok := f.handled[id]; ok && f.now().Sub(at) < HandledFor {
		return true
	}
	for _, items := range f.queues {
		for _, item := range items {
			if itemID(item) == id {
				return true
			}
		}
	}
	return false
}

// itemID returns the id of a stored message.
func itemID(item []byte) string {
	var m Message
	if m.UnmarshalJSON(item) != nil {
		return ""
	}
	return m.ID
}

// Peek implements [Inbox].
func (f *File) Peek(ctx context.Context, key string) (m Message, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return Message{}, false, err
	}
	err = f.locked(func() error {
		items := f.queues[key]
		if len(items) == 0 {
			return nil
		}
		ok = true
		return m.UnmarshalJSON(items[0]) // cannot fail: checked when kept
	})
	return m, ok, err
}

// Done implements [Inbox].
func (f *File) Done(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.locked(func() error {
		items := f.queues[key]
		prev, had := f.handled[id]
		prevKey, hadKey := f.senders[id]
		if len(items) > 0 && itemID(items[0]) == id {
			if len(items) == 1 {
				delete(f.queues, key)
			} else {
				f.queues[key] = items[1:]
			}
		}
		f.handled[id] = f.now().UTC()
		f.senders[id] = key
		if err := f.save(); err != nil {
			if len(items) > 0 {
				f.queues[key] = items
			}
			if had {
				f.handled[id] = prev
			} else {
				delete(f.handled, id)
			}
			if hadKey {
				f.senders[id] = prevKey
			} else {
				delete(f.senders, id)
			}
			return fmt.Errorf("delivery: inbox done: %w", err)
		}
		return nil
	})
}

// Keys implements [Inbox]; the keys are sorted.
func (f *File) Keys(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var keys []string
	err := f.locked(func() error {
		keys = make([]string, 0, len(f.queues))
		for k := range f.queues {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil
	})
	return keys, err
}

// Erase implements [Inbox]: one rewrite of the file, which leaves no old
// copy in the folder.
func (f *File) Erase(ctx context.Context, key string) (queued, handled int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	err = f.locked(func() error {
		queued = len(f.queues[key])
		var ids []string
		for id, k := range f.senders {
			if k == key {
				ids = append(ids, id)
			}
		}
		if queued == 0 && len(ids) == 0 {
			return nil
		}
		// On a failed save the file holds everything still: read it again
		// at the next call.
		delete(f.queues, key)
		for _, id := range ids {
			delete(f.handled, id)
			delete(f.senders, id)
		}
		if err := f.save(); err != nil {
			f.queues = nil
			return fmt.Errorf("delivery: inbox erase: %w", err)
		}
		handled = len(ids)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return queued, handled, nil
}

// save drops the ids older than HandledFor and writes the file; the lock
// is held.
func (f *File) save() error {
	cutoff := f.now().Add(-HandledFor)
	for id, at := range f.handled {
		if !at.After(cutoff) {
			delete(f.handled, id)
			delete(f.senders, id)
		}
	}
	err := atomicfile.Write(f.path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		// Messages are stored as given: escaping them anew would change
		// their bytes.
		enc.SetEscapeHTML(false)
		handled := make(map[string]int64, len(f.handled))
		for id, at := range f.handled {
			handled[id] = at.Unix()
		}
		return enc.Encode(fileJSON{Queues: f.queues, Handled: handled, Senders: f.senders})
	})
	if err != nil {
		return err
	}
	if st, err := statFile(f.path); err == nil {
		f.stamp = st
	} else {
		f.queues = nil // read it again at the next call
	}
	return nil
}
