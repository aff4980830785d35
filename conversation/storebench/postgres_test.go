package storebench_test

import (
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/internal/pgtest"
)

// postgresDB is one populated schema, shared by the run's benchmarks.
type postgresDB struct {
	mem   *conversation.Memory
	data  []byte        // a conversation's stored bytes
	pool  *pgxpool.Pool // a bare pool, for the floors
	read  string        // the floors' statements
	write string
}

var (
	postgresMu  sync.Mutex
	postgresDBs = map[int]*postgresDB{}
)

// postgresFor returns a schema of people conversations: the first saved
// through the store, the others copies of its record, made by one INSERT on
// the server.
func postgresFor(b *testing.B, people int) *postgresDB {
	b.Helper()
	url := pgtest.URL(b)
	postgresMu.Lock()
	defer postgresMu.Unlock()
	if d, ok := postgresDBs[people]; ok {
		return d
	}
	pool, err := pgxpool.New(ctx(), url)
	if err != nil {
		b.Fatal(err)
	}
	schema := "mombot_bench_" + randomText()
	atExit(func() {
		pool.Exec(ctx(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		pool.Close()
	})
	s, err := postgres.Open(ctx(), url, &postgres.Options{Schema: schema, Logger: quiet})
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
	records := pgx.Identifier{schema, "records"}.Sanitize()
	// phone(i) is "+1555" and i in 7 digits.
	if _, err := pool.Exec(ctx(), `INSERT INTO `+records+` (kind, key, data)
		SELECT 'conversations', '+1555' || lpad(i::text, 7, '0'), $1 FROM generate_series(1, $2::int - 1) AS i`,
		rec.Data, people); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx(), `VACUUM ANALYZE `+records); err != nil {
		b.Fatal(err)
	}
	var size int64
	pool.QueryRow(ctx(), `SELECT pg_total_relation_size($1)`, records).Scan(&size)
	b.Logf("postgres: populated %d people in %v (%d MB)", people, time.Since(start).Round(time.Millisecond), size>>20)

	// The floors run on a pool of pgx's defaults, which caches prepared
	// statements as the store's does, against the same table: the read
	// of a row by its key, and one INSERT or UPDATE of a row, committed
	// on its own (synchronous_commit, PostgreSQL's default: the commit
	// waits for the log to be flushed to disk).
	d := &postgresDB{mem: mem, data: rec.Data, pool: pool,
		read: `SELECT data FROM ` + records + ` WHERE kind = 'conversations' AND key = $1`,
		write: `INSERT INTO ` + records + ` (kind, key, data) VALUES ('storebench-floor', $1, $2)
			ON CONFLICT (kind, key) DO UPDATE SET data = excluded.data, version = excluded.version`,
	}
	postgresDBs[people] = d
	return d
}

// BenchmarkPostgres measures the PostgreSQL store against one read of a
// stored conversation's row by its key (History, and the store's own Get)
// and one durable one-row write of a conversation's bytes in the same table
// (SaveTurn, which reads the conversation, adds the turn and writes it
// back, and the store's own conditional Put). History and SaveTurn include
// Memory's decoding and encoding, which every store shares; Get and Put are
// what the store adds to its floor.
func BenchmarkPostgres(b *testing.B) {
	for _, people := range sizes {
		b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
			d := postgresFor(b, people)
			measure(b, func() {
				h, err := d.mem.History(ctx(), phone(mrand.IntN(people)))
				checkHistory(b, h, err)
			}, d.readFloor(b, people))
		})
		b.Run(fmt.Sprintf("people=%d/op=Get", people), func(b *testing.B) {
			d := postgresFor(b, people)
			measure(b, func() {
				r, err := d.mem.Store().Get(ctx(), conversation.Conversations, phone(mrand.IntN(people)))
				if err != nil || len(r.Data) < len(d.data)/2 {
					b.Fatalf("Get = %d bytes, %v", len(r.Data), err)
				}
			}, d.readFloor(b, people))
		})
		b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
			d := postgresFor(b, people)
			var turn []conversation.Message
			measurePrepared(b, func() { turn = nextTurn() }, func() {
				if err := d.mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
					b.Fatal(err)
				}
			}, d.writeFloor(b))
		})
		b.Run(fmt.Sprintf("people=%d/op=Put", people), func(b *testing.B) {
			d := postgresFor(b, people)
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
			}, d.writeFloor(b))
		})
	}
}

func (d *postgresDB) readFloor(b *testing.B, people int) func() {
	return func() {
		var data []byte
		if err := d.pool.QueryRow(ctx(), d.read, phone(mrand.IntN(people))).Scan(&data); err != nil || len(data) < len(d.data)/2 {
			b.Fatalf("floor read %d bytes, %v", len(data), err)
		}
	}
}

func (d *postgresDB) writeFloor(b *testing.B) func() {
	return func() {
		if _, err := d.pool.Exec(ctx(), d.write, fmt.Sprint(mrand.IntN(floorKeys)), d.data); err != nil {
			b.Fatal(err)
		}
	}
}
