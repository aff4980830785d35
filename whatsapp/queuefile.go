package whatsapp

import (
	"bytes"
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

// QueueFile is a durable [Queue] for one process, kept in a JSON file next
// to the conversations, so that the messages acknowledged to Meta but not
// yet answered survive a crash or a restart:
//
//	{"queues": {"+16505551234": [{"ID": "wamid.HBgL...", ...}, ...]}}
//
// Every Push and Ack rewrites the file atomically (a temporary file in the
// same folder, fsync, rename, fsync of the folder; mode 0600) before it
// returns, so an item pushed is on disk. Items must be JSON values, as the
// Server's are; they are kept compacted, and Peek returns them so. The file
// holds messages only while they wait for their answer, so it stays small.
//
// A QueueFile is safe for concurrent use within one process; two processes
// must not share a file (several replicas need a shared Queue).
type QueueFile struct {
	path string

	mu     sync.Mutex
	queues map[string][]json.RawMessage
}

var _ Queue = (*QueueFile)(nil)

// QueueFileOptions configure [OpenQueueFile]. The zero value is the
// defaults.
type QueueFileOptions struct {
	// Now is the clock that names a damaged file moved aside; nil means
	// time.Now.
	Now func() time.Time
	// Logger reports a damaged file; nil means slog.Default().
	Logger *slog.Logger
}

type queueJSON struct {
	Queues map[string][]json.RawMessage `json:"queues"`
}

// OpenQueueFile loads the queues kept at path, a missing file being empty
// queues. A file that cannot be parsed is renamed aside (path + ".corrupt-"
// and a time stamp), logged, and replaced by empty queues, so that a
// damaged file does not stop the server and can still be read by hand; an
// unreadable one is an error.
func OpenQueueFile(path string, opts *QueueFileOptions) (*QueueFile, error) {
	var o QueueFileOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	q := &QueueFile{path: path, queues: map[string][]json.RawMessage{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return q, nil
	}
	if err != nil {
		return nil, fmt.Errorf("whatsapp: open queue file: %w", err)
	}
	var f queueJSON
	if err := json.Unmarshal(data, &f); err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, o.Now().UnixNano())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("whatsapp: queue file is damaged (%v) and cannot be moved aside: %w", err, rerr)
		}
		o.Logger.Error("whatsapp: queue file is damaged; moved aside, starting empty: the messages in it are not answered",
			"path", path, "moved_to", aside, "err", err)
		return q, nil
	}
	for key, items := range f.Queues {
		for _, item := range items {
			var b bytes.Buffer
			if json.Compact(&b, item) == nil {
				q.queues[key] = append(q.queues[key], b.Bytes())
			}
		}
	}
	return q, nil
}

// Path returns the file's path.
func (q *QueueFile) Path() string { return q.path }

// Push implements [Queue]. It fails, keeping nothing, when item is not
// JSON or the file cannot be written.
func (q *QueueFile) Push(ctx context.Context, key string, item []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, item); err != nil {
		return fmt.Errorf("whatsapp: queue push: item is not JSON: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queues[key] = append(q.queues[key], b.Bytes())
	if err := q.save(); err != nil {
		items := q.queues[key]
		if q.queues[key] = items[:len(items)-1]; len(q.queues[key]) == 0 {
			delete(q.queues, key)
		}
		return fmt.Errorf("whatsapp: queue push: %w", err)
	}
	return nil
}

// Peek implements [Queue].
func (q *QueueFile) Peek(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.queues[key]
	if len(items) == 0 {
		return nil, false, nil
	}
	return bytes.Clone(items[0]), true, nil
}

// Ack implements [Queue]. When the file cannot be written, the item stays
// and Ack returns the error.
func (q *QueueFile) Ack(ctx context.Context, key string, item []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.queues[key]
	if len(items) == 0 || !bytes.Equal(items[0], item) {
		return nil
	}
	if len(items) == 1 {
		delete(q.queues, key)
	} else {
		q.queues[key] = items[1:]
	}
	if err := q.save(); err != nil {
		q.queues[key] = items
		return fmt.Errorf("whatsapp: queue ack: %w", err)
	}
	return nil
}

// Keys implements [Queue]; the keys are sorted.
func (q *QueueFile) Keys(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, len(q.queues))
	for k := range q.queues {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// save writes the queues to the file; the caller holds q.mu.
func (q *QueueFile) save() error {
	return atomicfile.Write(q.path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		// Items are stored as given: escaping them anew would make the
		// bytes read back differ from those acked.
		enc.SetEscapeHTML(false)
		return enc.Encode(queueJSON{Queues: q.queues})
	})
}
