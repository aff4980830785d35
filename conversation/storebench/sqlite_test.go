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
	raw   *sql.DB // a connection as the store's, for the floors
	read  *sql.Stmt
	write *sql.Stmt
}

var (
	sqliteMu  sync.Mutex
	sqliteDir string
	sqliteDBs = map[int]*sqliteDB{}
)

// sqliteFor returns the database of people conversations: the first saved
// through the store, the others copies of its rows, made in one
// transaction straight into the tables, whatever columns they have.
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

	start := time.Now()
	bulk, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(OFF)")
	if err != nil {
		b.Fatal(err)
	}
	defer bulk.Close()
	tx, err := bulk.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`CREATE TEMP TABLE tc AS SELECT * FROM conversations WHERE phone = '` + phone(0) + `'`,
		`CREATE TEMP TABLE tt AS SELECT * FROM turns WHERE phone = '` + phone(0) + `'`,
	} {
		if _, err := tx.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	var stmts []*sql.Stmt
	for _, q := range []string{
		`UPDATE tc SET phone = ?1`, `UPDATE tt SET phone = ?1`,
		`INSERT INTO conversations SELECT * FROM tc`, `INSERT INTO turns SELECT * FROM tt`,
	} {
		st, err := tx.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		stmts = append(stmts, st)
	}
	for p := 1; p < people; p++ {
		for i, st := range stmts {
			var err error
			if i < 2 {
				_, err = st.Exec(phone(p))
			} else {
				_, err = st.Exec()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := tx.Exec(`CREATE TABLE bench_floor (phone TEXT NOT NULL PRIMARY KEY, json TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("sqlite: populated %d people in %v (%d MB)", people, time.Since(start).Round(time.Millisecond), fi.Size()>>20)

	// The floors use a connection set up as the store's: WAL,
	// synchronous=FULL, so that a commit is an fsync.
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	atExit(func() { raw.Close() })
	read, err := raw.Prepare(`SELECT json FROM turns WHERE phone = ?1 ORDER BY seq`)
	if err != nil {
		b.Fatal(err)
	}
	write, err := raw.Prepare(`INSERT OR REPLACE INTO bench_floor (phone, json) VALUES (?1, ?2)`)
	if err != nil {
		b.Fatal(err)
	}
	d := &sqliteDB{mem: mem, raw: raw, read: read, write: write}
	sqliteDBs[people] = d
	return d
}

// BenchmarkSQLite measures the SQLite store against one indexed read of
// the conversation's rows (History) and one committed write of a row of
// one turn's bytes (SaveTurn), both on the same database.
func BenchmarkSQLite(b *testing.B) {
	all, one := conversationBytes(b)
	for _, people := range sizes {
		b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			measure(b, func() {
				h, err := d.mem.History(ctx(), phone(mrand.IntN(people)))
				checkHistory(b, h, err)
			}, func() {
				rows, err := d.read.Query(phone(mrand.IntN(people)))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					var data []byte
					if err := rows.Scan(&data); err != nil {
						b.Fatal(err)
					}
					n += len(data)
				}
				if err := rows.Close(); err != nil || n < len(all)/2 {
					b.Fatalf("floor read %d bytes, %v", n, err)
				}
			})
		})
		b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
			d := sqliteFor(b, people)
			var turn []conversation.Message
			measurePrepared(b, func() { turn = nextTurn() }, func() {
				if err := d.mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := d.write.Exec(phone(mrand.IntN(people)), one); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
