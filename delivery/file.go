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
	"time"

	"github.com/mombot/mombot/internal/atomicfile"
)

// File is a durable [Inbox] for one process, kept in one JSON file next to
// the conversations: the messages waiting for their reply, and the ids of
// those handled in the last [HandledFor].
//
//	{"queues": {"+16505551234": [{"id": "wamid.HBgL...", "key": "+16505551234", "body": {...}}]},
//	 "handled": {"wamid.HBgL...": 1771929300}}
//
// A handled id's value is when it was handled, in Unix seconds: a week of
// a family's ids stays a few tens of kilobytes, written with every change.
//
// Every Push and Done rewrites the file atomically (a temporary file in the
// same folder, fsync, rename, fsync of the folder; mode 0600) before it
// returns, so a message pushed is on disk, and Done's removal and record
// are one write: the file holds a message or its id, never both and never
// neither. Ids older than HandledFor are dropped at each write. When a
// write fails, the File is left as it was and the error returned.
//
// A File is safe for concurrent use within one process; two processes must
// not share a file (several replicas need a shared Inbox, on Redis).
type File struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	queues  map[string][]json.RawMessage
	handled map[string]time.Time
	// legacy is an earlier version's file of handled ids, merged in,
	// and removed after the first write.
	legacy string
}

var _ Inbox = (*File)(nil)

// FileOptions configure [OpenFile]. The zero value is the defaults.
type FileOptions struct {
	// Now is the clock that ages handled ids and names a damaged file
	// moved aside; nil means time.Now.
	Now func() time.Time
	// Logger reports a damaged file; nil means slog.Default().
	Logger *slog.Logger
	// Handled names the file of handled ids that mombot kept apart before
	// ({"seen": {"wamid...": time}}, whatsapp-seen.json): its ids are
	// taken in, and it is removed once the File has written them, so that
	// an upgrade does not answer again what was answered before it.
	Handled string
}

type fileJSON struct {
	Queues  map[string][]json.RawMessage `json:"queues"`
	Handled map[string]int64             `json:"handled,omitempty"`
}

// OpenFile loads the inbox kept at path, a missing file being an empty
// inbox. A file that cannot be parsed is renamed aside (path + ".corrupt-"
// and a time stamp), logged, and replaced by an empty inbox, so that a
// damaged file does not stop the server and can still be read by hand; an
// unreadable one is an error. A message in it that cannot be read is
// dropped and logged.
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
	f := &File{path: path, now: o.Now, queues: map[string][]json.RawMessage{}, handled: map[string]time.Time{}}
	// This process is the file's only writer (see File), so the temporary
	// files of a save killed mid-write are leftovers: remove them.
	for _, p := range []string{path, o.Handled} {
		if p == "" {
			continue
		}
		if n, err := atomicfile.RemoveTemps(p); err != nil {
			return nil, fmt.Errorf("delivery: open inbox file: remove temporary files: %w", err)
		} else if n > 0 {
			o.Logger.Info("delivery: removed temporary files left by interrupted saves", "path", p, "count", n)
		}
	}
	var data fileJSON
	if err := readJSON(path, &data, o); err != nil {
		return nil, fmt.Errorf("delivery: open inbox file: %w", err)
	}
	cutoff := o.Now().Add(-HandledFor)
	for id, sec := range data.Handled {
		if at := time.Unix(sec, 0).UTC(); id != "" && at.After(cutoff) {
			f.handled[id] = at
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
		o.Logger.Error("delivery: unreadable messages in the inbox file dropped", "path", path, "dropped", dropped)
	}
	if o.Handled != "" {
		var old struct {
			Seen map[string]time.Time `json:"seen"`
		}
		if err := readJSON(o.Handled, &old, o); err != nil {
			return nil, fmt.Errorf("delivery: open inbox file: %w", err)
		}
		for id, at := range old.Seen {
			if id != "" && at.After(cutoff) && at.After(f.handled[id]) {
				f.handled[id] = at
			}
		}
		if _, err := os.Stat(o.Handled); err == nil {
			f.legacy = o.Handled
		}
	}
	return f, nil
}

// readJSON reads the JSON file at path into v: nothing when it is missing;
// a damaged one is moved aside and logged.
func readJSON(path string, v any, o FileOptions) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, o.Now().UnixNano())
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("%s is damaged (%v) and cannot be moved aside: %w", path, err, rerr)
		}
		o.Logger.Error("delivery: inbox file is damaged; moved aside, starting empty: the messages in it are not answered",
			"path", path, "moved_to", aside, "err", err)
	}
	return nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Push implements [Inbox].
func (f *File) Push(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	item, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waitingOrHandled(m.ID) {
		return ErrDuplicate
	}
	items := f.queues[m.Key]
	f.queues[m.Key] = append(items[:len(items):len(items)], item)
	if err := f.save(); err != nil {
		if len(items) == 0 {
			delete(f.queues, m.Key)
		} else {
			f.queues[m.Key] = items
		}
		return fmt.Errorf("delivery: inbox push: %w", err)
	}
	return nil
}

// waitingOrHandled reports whether id is queued or was handled in the last
// HandledFor; f.mu is held.
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
func (f *File) Peek(ctx context.Context, key string) (Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	items := f.queues[key]
	if len(items) == 0 {
		return Message{}, false, nil
	}
	var m Message
	if err := m.UnmarshalJSON(items[0]); err != nil {
		return Message{}, false, err // cannot happen: checked when kept
	}
	return m, true, nil
}

// Done implements [Inbox].
func (f *File) Done(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	items := f.queues[key]
	prev, had := f.handled[id]
	if len(items) > 0 && itemID(items[0]) == id {
		if len(items) == 1 {
			delete(f.queues, key)
		} else {
			f.queues[key] = items[1:]
		}
	}
	f.handled[id] = f.now().UTC()
	if err := f.save(); err != nil {
		if len(items) > 0 {
			f.queues[key] = items
		}
		if had {
			f.handled[id] = prev
		} else {
			delete(f.handled, id)
		}
		return fmt.Errorf("delivery: inbox done: %w", err)
	}
	return nil
}

// Keys implements [Inbox]; the keys are sorted.
func (f *File) Keys(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.queues))
	for k := range f.queues {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// save drops the ids older than HandledFor and writes the file; f.mu is
// held.
func (f *File) save() error {
	cutoff := f.now().Add(-HandledFor)
	for id, at := range f.handled {
		if !at.After(cutoff) {
			delete(f.handled, id)
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
		return enc.Encode(fileJSON{Queues: f.queues, Handled: handled})
	})
	if err == nil && f.legacy != "" {
		if os.Remove(f.legacy) == nil || !fileExists(f.legacy) {
			f.legacy = ""
		}
	}
	return err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
