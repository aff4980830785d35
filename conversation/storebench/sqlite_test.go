package storebench_test

import (
	"database/sql"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
)

// sqliteDB is one populated database, shared by the run's benchmarks.
type sqliteDB struct {
	mem   *conversation.Memory
	data  []byte    // a conversation's stored bytes
	read  *sql.Stmt // the floors, on a connection set up as the store's
	write *sql.Stmt
}

var (
	sqliteMu  sync.Mutex
	sqliteDir string
	sqliteDBs = map[int]*sqliteDB{}
)

// sqliteFor returns the database of people conversations: the first saved
// through the store, the others copies of its record, written in one
// transaction.
func sqliteFor(b *testing.B, people int) *sqliteDB {
	b.Helper()
	sqliteMu.Lock()
	defer sqliteMu.Unlock()
	if d, ok := sqliteDBs[people]; ok {
		return d
	}
	if sqliteDir == "" {
		dir, err := os.MkdirTemp("", "mombot-storebench-")
		if err != nil {
			b.Fatal(err)
		}
		sqliteDir = dir
		atExit(func() { os.RemoveAll(dir) })
	}
	path := filepath.Join(sqliteDir, fmt.Sprintf("%d.db", people))
	s, err := sqlite.Open(path, &sqlite.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	atExit(func() { s.Close() })
	mem, err := conversation.New(s, &conversation.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, mem, phone(0))
	rec, err := s.Get(ctx(), conversation.Conversations, phone(0))
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	bulk, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(OFF)")
	if err != nil {
		b.Fatal(err)
	}
	defer bulk.Close()
	tx, err := bulk.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	insert, err := tx.Prepare(`INSERT INTO records (kind, key, data, version) VALUES (?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for p := 1; p < people; p++ {
		if _, err := insert.Exec(string(conversation.Conversations), phone(p), string(rec.Data), mrand.Int64()); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("sqlite: populated %d people in %v (%d MB)", people, time.Since(start).Round(time.Millisecond), fi.Size()>>20)

	// The floors use a connection set up as the store's writers are:
	// WAL, synchronous=FULL (a commit is an fsync), secure_delete.
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)&_pragma=secure_delete(1)")
	if err != nil {
		b.Fatal(err)
	}
	atExit(func() { raw.Close() })
	read, err := raw.Prepare(`SELECT data FROM records WHERE kind = 'conversations' AND key = ?`)
	if err != nil {
		b.Fatal(err)
	}
	write, err := raw.Prepare(`INSERT OR REPLACE INTO records (kind, key, data, version) VALUES ('storebench-floor', ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	d := &sqliteDB{mem: mem, data: rec.Data, read: read, write: write}
	sqliteDBs[people] = d
	return d
}

// BenchmarkSQLite measures the SQLite store against one read of a stored
// conversation's row by its key (History, and the store's own Get) and one
// durable one-row write transaction of a conversation's bytes in the same
// table (SaveTurn, which reads the conversation, adds the turn and writes
// it back, and the store's own conditional Put). History and SaveTurn
// include Memory's decoding and encoding, which every store shares; Get
// and Put are what the store adds to its floor.
func BenchmarkSQLite(b *testing.B) {
	for _, people := range sizes {
		b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			measure(b, func() {
				h, err := d.mem.History(ctx(), phone(mrand.IntN(people)))
				checkHistory(b, h, err)
			}, d.readFloor(b, people))
		})
		b.Run(fmt.Sprintf("people=%d/op=Get", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			measure(b, func() {
				r, err := d.mem.Store().Get(ctx(), conversation.Conversations, phone(mrand.IntN(people)))
				if err != nil || len(r.Data) < len(d.data)/2 {
					b.Fatalf("Get = %d bytes, %v", len(r.Data), err)
				}
			}, d.readFloor(b, people))
		})
		b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			var turn []conversation.Message
			measurePrepared(b, func() { turn = nextTurn() }, func() {
				if err := d.mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
					b.Fatal(err)
				}
			}, d.writeFloor(b, people))
		})
		b.Run(fmt.Sprintf("people=%d/op=Put", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			var rec conversation.Record
			measurePrepared(b, func() {
				var err error
				if rec, err = d.mem.Store().Get(ctx(), conversation.Conversations, phone(mrand.IntN(people))); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := d.mem.Store().Put(ctx(), conversation.Conversations, rec, 0); err != nil {
					b.Fatal(err)
				}
			}, d.writeFloor(b, people))
		})
	}
}

func (d *sqliteDB) readFloor(b *testing.B, people int) func() {
	return func() {
		var data []byte
		if err := d.read.QueryRow(phone(mrand.IntN(people))).Scan(&data); err != nil || len(data) < len(d.data)/2 {
			b.Fatalf("floor read %d bytes, %v", len(data), err)
		}
	}
}

func (d *sqliteDB) writeFloor(b *testing.B, people int) func() {
	return func() {
		if _, err := d.write.Exec(phone(mrand.IntN(people)), string(d.data), mrand.Int64()); err != nil {
			b.Fatal(err)
		}
	}
}
