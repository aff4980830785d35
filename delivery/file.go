package delivery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mombot/mombot/internal/atomicfile"
)

// File is a durable [Inbox] kept in one file next to the conversations: a
// log of JSON records, one a line, after a header line.
//
//	{"mombot_inbox":1}
//	{"op":"push","id":"wamid.HBgL...","key":"+16505551234","body":{...}}
//	{"op":"sending","id":"wamid.HBgL...","key":"+16505551234"}
//	{"op":"done","id":"wamid.HBgL...","key":"+16505551234","at":1771929300}
//
// A push record appends a message to its sender's queue; a sending record
// marks the head of the sender's queue, if it is that message, as having
// its reply sent (see [Inbox]); a done record removes the head of the
// sender's queue if it is that message, and records its id as handled at
// "at" (Unix seconds) for its sender. Push appends one record per message
// of its batch, Done one record, and RecordHandled a done record for each
// id it records (none waiting, so they only record), each call with one
// write and one fsync before it returns, so that a call costs the same
// however long the queues are. Sending appends its record without an fsync: the other
// processes that share the File read it at once, and it survives the
// process's kill -9; only a crash of the machine may lose it, and then the
// message is answered again at the next start without the wait the mark
// asks for, which after a crash nobody needs, since a File has one
// process answering from it. When the log holds more
// than twice the records its state needs, the next write replaces it with
// a log of that state (atomically: a temporary file, fsync, rename, fsync
// of the folder; mode 0600), which also drops the ids handled more than
// [HandledFor] ago. Erase always does so, so that no old copy of what it
// removed is left in the file.
//
// A process killed while appending leaves at most a torn last record: it
// was never acknowledged, and it is ignored and cut off at the next write.
// A record that cannot be read is logged and skipped; a file that is not
// an inbox at all is moved aside (path + ".corrupt-" and a time stamp),
// logged, and replaced by an empty inbox. The file mombot v0.1.0 wrote,
// one JSON object ({"queues": ..., "handled": ...}), is read too, and
// replaced by a log at the first write.
//
// A File is safe for concurrent use, also by several processes (mombot
// serve and mombot erase): each call holds an advisory lock on path +
// ".lock" (flock(2)) and first reads what other processes appended, or the
// whole file again when one replaced it.
type File struct {
	path string
	now  func() time.Time
	log  *slog.Logger

	mu   sync.Mutex
	lock *os.File // path + ".lock", opened at the first call
	// ino and end are the inode of the file as last read or written, and
	// the end of its last whole record; loaded is false until it is read.
	ino    uint64
	end    int64
	loaded bool
	// v010 is set while the file is in v0.1.0's format.
	v010 bool
	st   fileState
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

// logHeader is the first line of the log.
const logHeader = `{"mombot_inbox":1}`

// record is one line of the log.
type record struct {
	Op   string          `json:"op"`
	ID   string          `json:"id"`
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body,omitempty"`
	At   int64           `json:"at,omitempty"`
}

// fileState is what the log says: the queues, the ids waiting in them,
// the ids handled, and how many records say it.
type fileState struct {
	queues  map[string][]Message
	waiting map[string]bool
	handled map[string]handled
	records int
}

func newFileState() fileState {
	return fileState{queues: map[string][]Message{}, waiting: map[string]bool{}, handled: map[string]handled{}}
}

// apply changes st as r says.
func (st *fileState) apply(r record) {
	st.records++
	switch r.Op {
	case "push":
		st.queues[r.Key] = append(st.queues[r.Key], Message{ID: r.ID, Key: r.Key, Body: r.Body})
		st.waiting[r.ID] = true
	case "sending":
		if q := st.queues[r.Key]; len(q) > 0 && q[0].ID == r.ID {
			q[0].Sending = true
		}
	case "done":
		if q := st.queues[r.Key]; len(q) > 0 && q[0].ID == r.ID {
			if len(q) == 1 {
				delete(st.queues, r.Key)
			} else {
				st.queues[r.Key] = q[1:]
			}
			delete(st.waiting, r.ID)
		}
		st.handled[r.ID] = handled{at: time.Unix(r.At, 0).UTC(), key: r.Key}
	}
}

// live returns how many records a log of st alone would hold.
func (st *fileState) live() int {
	n := len(st.handled)
	for _, q := range st.queues {
		n += len(q)
		if q[0].Sending {
			n++
		}
	}
	return n
}

// OpenFile opens the inbox kept at path, a missing file being an empty
// inbox. A file that is not an inbox is moved aside and logged (see
// [File]); an unreadable one is an error. Close the File to release its
// lock file.
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
		// those of compactions killed mid-write: remove them.
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

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// locked runs fn holding f.mu and the lock file, f.st being up to date
// with the file.
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
		return fmt.Errorf("delivery: inbox lock: %w", err)
	}
	defer syscall.Flock(int(f.lock.Fd()), syscall.LOCK_UN)
	if err := f.catchUp(); err != nil {
		return fmt.Errorf("delivery: read inbox file: %w", err)
	}
	return fn()
}

// catchUp reads what was written to the file since f last did: the
// records appended, or the whole file when it was replaced. The lock is
// held.
func (f *File) catchUp() error {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.st, f.ino, f.end, f.loaded, f.v010 = newFileState(), 0, 0, true, false
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	ino := inode(fi)
	if f.loaded && ino == f.ino && (!f.v010 || fi.Size() == f.end) {
		if fi.Size() == f.end {
			return nil
		}
		if _, err := file.Seek(f.end, io.SeekStart); err != nil {
			return err
		}
		return f.read(file, f.end, false)
	}
	f.st, f.ino, f.end, f.loaded, f.v010 = newFileState(), ino, 0, true, false
	return f.read(file, 0, true)
}

func inode(fi fs.FileInfo) uint64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}

// read applies the records of file from offset at (0: the whole file, its
// header first) to f.st.
func (f *File) read(file *os.File, at int64, whole bool) error {
	r := bufio.NewReaderSize(file, 64<<10)
	if whole {
		first, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(first) == 0 {
			return f.readV010(nil) // empty: damaged
		}
		if string(bytes.TrimSpace(first)) != logHeader {
			rest, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return f.readV010(append(first, rest...))
		}
		at = int64(len(first))
	}
	skipped := 0
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				// A torn last record: never acknowledged; cut off at the
				// next write.
				f.log.Warn("delivery: an incomplete last record of the inbox file ignored", "path", f.path, "bytes", len(line))
			}
			break
		}
		if err != nil {
			return err
		}
		at += int64(len(line))
		var rec record
		// A done record without a key is an id v0.1.0 recorded, without
		// its sender.
		if json.Unmarshal(line, &rec) != nil || rec.ID == "" || !(rec.Op == "done" || rec.Op == "sending" && rec.Key != "" || rec.Op == "push" && rec.Key != "" && len(rec.Body) > 0) {
			skipped++
			continue
		}
		f.st.apply(rec)
	}
	f.end = at
	if skipped > 0 {
		f.log.Error("delivery: unreadable records of the inbox file skipped", "path", f.path, "skipped", skipped)
	}
	return nil
}

// v010File is the file mombot v0.1.0 wrote.
type v010File struct {
	Queues  map[string][]json.RawMessage `json:"queues"`
	Handled map[string]int64             `json:"handled"`
}

// readV010 reads data as the file of v0.1.0; data that is not is moved
// aside.
func (f *File) readV010(data []byte) error {
	var old v010File
	if err := json.Unmarshal(data, &old); err != nil || old.Queues == nil {
		if err == nil {
			err = errors.New("neither an inbox log nor a v0.1.0 inbox")
		}
		aside := fmt.Sprintf("%s.corrupt-%d", f.path, f.now().UnixNano())
		if rerr := os.Rename(f.path, aside); rerr != nil {
			return fmt.Errorf("%s is damaged (%v) and cannot be moved aside: %w", f.path, err, rerr)
		}
		f.log.Error("delivery: inbox file is damaged; moved aside, starting empty: the messages in it are not answered",
			"path", f.path, "moved_to", aside, "err", err)
		f.st, f.ino, f.end = newFileState(), 0, 0
		return nil
	}
	f.v010, f.end = true, int64(len(data))
	dropped := 0
	for key, items := range old.Queues {
		for _, item := range items {
			var m Message
			if err := m.UnmarshalJSON(item); err != nil || m.Key != key {
				dropped++
				continue
			}
			f.st.apply(record{Op: "push", ID: m.ID, Key: m.Key, Body: m.Body})
		}
	}
	for id, sec := range old.Handled {
		if id != "" {
			f.st.handled[id] = handled{at: time.Unix(sec, 0).UTC()}
		}
	}
	if dropped > 0 {
		f.log.Error("delivery: unreadable messages in the inbox file dropped", "path", f.path, "dropped", dropped)
	}
	return nil
}

// isKnown reports whether id is waiting or was handled in the last
// HandledFor; the lock is held.
func (f *File) isKnown(id string) bool {
	if f.st.waiting[id] {
		return true
	}
	h, ok := f.st.handled[id]
	return ok && f.now().Sub(h.at) < HandledFor
}

// write writes recs and applies them to f.st: appended, with one fsync if
// durable is set, or with the whole state in a new log (always durable)
// when the log holds more than twice what it needs (or is in v0.1.0's
// format). On error f.st is as it was. The lock is held.
func (f *File) write(recs []record, durable bool) error {
	live := f.st.live()
	if f.v010 || f.end == 0 || f.st.records+len(recs) > 2*(live+len(recs))+minCompact {
		next := f.st.clone()
		for _, r := range recs {
			next.apply(r)
		}
		if err := f.rewrite(&next); err != nil {
			return err
		}
		f.st = next
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Bodies are stored as given: escaping them anew would change their
	// bytes.
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	file, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer file.Close()
	// A torn record a killed writer left after f.end is cut off first.
	n, err := file.WriteAt(buf.Bytes(), f.end)
	if err == nil {
		err = file.Truncate(f.end + int64(n))
	}
	if err == nil && durable {
		err = syncFile(file)
	}
	if err != nil {
		// What was written, if anything, is cut off; if that fails too,
		// the next call reads the file again.
		if file.Truncate(f.end) != nil {
			f.loaded = false
		}
		return err
	}
	for _, r := range recs {
		f.st.apply(r)
	}
	f.end += int64(n)
	return nil
}

// minCompact is how many records beyond twice its state a log may hold
// before it is rewritten, so that a small inbox is not rewritten often.
var minCompact = 1000

// clone returns a copy of st that changes apart from it.
func (st *fileState) clone() fileState {
	c := newFileState()
	for k, q := range st.queues {
		c.queues[k] = slices.Clone(q)
	}
	for id := range st.waiting {
		c.waiting[id] = true
	}
	for id, h := range st.handled {
		c.handled[id] = h
	}
	c.records = st.records
	return c
}

// rewrite replaces the file by a log of st, without the ids handled more
// than HandledFor ago, and counts its records in st. The lock is held.
func (f *File) rewrite(st *fileState) error {
	cutoff := f.now().Add(-HandledFor)
	var size int64
	records := 0
	err := rewriteFile(f.path, func(w io.Writer) error {
		cw := &countWriter{w: w}
		bw := bufio.NewWriterSize(cw, 64<<10)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if _, err := bw.WriteString(logHeader + "\n"); err != nil {
			return err
		}
		// The ids handled first, oldest first, then the queues in key
		// order: the same state gives the same file.
		ids := make([]string, 0, len(st.handled))
		for id, h := range st.handled {
			if h.at.After(cutoff) {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b string) int {
			if c := st.handled[a].at.Compare(st.handled[b].at); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for _, id := range ids {
			h := st.handled[id]
			if err := enc.Encode(record{Op: "done", ID: id, Key: h.key, At: h.at.Unix()}); err != nil {
				return err
			}
			records++
		}
		for _, key := range slices.Sorted(maps.Keys(st.queues)) {
			for _, m := range st.queues[key] {
				if err := enc.Encode(record{Op: "push", ID: m.ID, Key: m.Key, Body: m.Body}); err != nil {
					return err
				}
				records++
			}
			if head := st.queues[key][0]; head.Sending {
				if err := enc.Encode(record{Op: "sending", ID: head.ID, Key: key}); err != nil {
					return err
				}
				records++
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		size = cw.n
		return nil
	})
	if err != nil {
		return err
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		f.loaded = false
		return nil // written: the next call reads it again
	}
	for id, h := range st.handled {
		if !h.at.After(cutoff) {
			delete(st.handled, id)
		}
	}
	st.records = records
	f.ino, f.end, f.v010 = inode(fi), size, false
	return nil
}

// syncFile makes what was appended to file durable, and rewriteFile
// replaces a file atomically: variables so that tests can count them.
var (
	syncFile    = (*os.File).Sync
	rewriteFile = atomicfile.Write
)

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Push implements [Inbox]: one write and one fsync for the batch.
func (f *File) Push(ctx context.Context, batch ...Message) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	recs := make([]record, 0, len(batch))
	for _, m := range batch {
		var b bytes.Buffer
		if err := json.Compact(&b, m.Body); err != nil {
			return nil, fmt.Errorf("delivery: message %s: body is not JSON: %w", m.ID, err)
		}
		if m.ID == "" || m.Key == "" {
			return nil, errors.New("delivery: message without an id or a key")
		}
		recs = append(recs, record{Op: "push", ID: m.ID, Key: m.Key, Body: b.Bytes()})
	}
	dup := make([]bool, len(batch))
	err := f.locked(func() error {
		kept := recs[:0:0]
		inBatch := map[string]bool{}
		for i, r := range recs {
			if f.isKnown(r.ID) || inBatch[r.ID] {
				dup[i] = true
				continue
			}
			inBatch[r.ID] = true
			kept = append(kept, r)
		}
		if len(kept) == 0 {
			return nil
		}
		if err := f.write(kept, true); err != nil {
			return fmt.Errorf("delivery: inbox push: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dup, nil
}

// Peek implements [Inbox].
func (f *File) Peek(ctx context.Context, key string) (m Message, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return Message{}, false, err
	}
	err = f.locked(func() error {
		if q := f.st.queues[key]; len(q) > 0 {
			m, ok = q[0], true
			m.Body = slices.Clone(m.Body)
		}
		return nil
	})
	return m, ok, err
}

// Done implements [Inbox]: one record, one fsync.
func (f *File) Done(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.locked(func() error {
		if err := f.write([]record{{Op: "done", ID: id, Key: key, At: f.now().Unix()}}, true); err != nil {
			return fmt.Errorf("delivery: inbox done: %w", err)
		}
		return nil
	})
}

// Sending implements [Inbox]: one record, written without an fsync (see
// [File]), and none when the head of key's queue is not id or is marked
// already.
func (f *File) Sending(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.locked(func() error {
		if q := f.st.queues[key]; len(q) == 0 || q[0].ID != id || q[0].Sending {
			return nil
		}
		if err := f.write([]record{{Op: "sending", ID: id, Key: key}}, false); err != nil {
			return fmt.Errorf("delivery: inbox sending: %w", err)
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
		keys = slices.Sorted(maps.Keys(f.st.queues))
		return nil
	})
	return keys, err
}

// Erase implements [Inbox]: the file is rewritten without key's messages
// and ids, leaving no old copy of them in the folder.
func (f *File) Erase(ctx context.Context, key string) (queued, handled int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	err = f.locked(func() error {
		var ids []string
		for id, h := range f.st.handled {
			if h.key == key {
				ids = append(ids, id)
			}
		}
		q := f.st.queues[key]
		if len(q) == 0 && len(ids) == 0 {
			return nil
		}
		next := f.st.clone()
		for _, m := range q {
			delete(next.waiting, m.ID)
		}
		delete(next.queues, key)
		for _, id := range ids {
			delete(next.handled, id)
		}
		if err := f.rewrite(&next); err != nil {
			return fmt.Errorf("delivery: inbox erase: %w", err)
		}
		f.st = next
		queued, handled = len(q), len(ids)
		return nil
	})
	return queued, handled, err
}

// HandledIDs implements [Inbox]: the times are Unix seconds.
func (f *File) HandledIDs(ctx context.Context) ([]HandledID, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []HandledID
	err := f.locked(func() error {
		out = liveHandled(f.st.handled, f.now())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delivery: inbox handled ids: %w", err)
	}
	return out, nil
}

// RecordHandled implements [Inbox]: a done record for each id recorded,
// in one write and one fsync. None of their ids is waiting, so the records
// remove nothing from a queue.
func (f *File) RecordHandled(ctx context.Context, hs ...HandledID) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := f.locked(func() error {
		now := f.now()
		var recs []record
		inBatch := map[string]bool{}
		for _, h := range hs {
			at, ok := h.recordAt(now)
			if !ok || f.isKnown(h.ID) || inBatch[h.ID] {
				continue
			}
			inBatch[h.ID] = true
			recs = append(recs, record{Op: "done", ID: h.ID, Key: h.Key, At: at.Unix()})
		}
		if len(recs) == 0 {
			return nil
		}
		if err := f.write(recs, true); err != nil {
			return fmt.Errorf("delivery: inbox record handled: %w", err)
		}
		n = len(recs)
		return nil
	})
	return n, err
}
