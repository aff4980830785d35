package postgres_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/internal/pgtest"
)

var quiet = slog.New(slog.DiscardHandler)

func ctx() context.Context { return context.Background() }

const kind conversation.Kind = "postgres-test"

// TestConformance runs the suite every store passes, each case in a schema
// of its own.
func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		schema := pgtest.Schema(t)
		return func() (conversation.Store, error) {
			return postgres.Open(ctx(), url, &postgres.Options{Schema: schema, Logger: quiet})
		}
	})
}

// open opens a writer on schema and closes it when the test ends.
func open(t *testing.T, schema string, opts *postgres.Options) *postgres.Store {
	t.Helper()
	o := postgres.Options{Logger: quiet}
	if opts != nil {
		o = *opts
	}
	o.Schema = schema
	s, err := postgres.Open(ctx(), pgtest.URL(t), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// tables returns the tables in schema, by name.
func tables(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	rows, _ := conn.Query(ctx(), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func schemaExists(t *testing.T, conn *pgx.Conn, schema string) bool {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(ctx(), `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestMigrateOnce: writers that open a new schema at once all succeed, and
// one of them sets it up, in one transaction: the schema, its tables and
// one row per migration in schema_migrations.
func TestMigrateOnce(t *testing.T) {
	url := pgtest.URL(t)
	conn := pgtest.Conn(t)
	schema := pgtest.Name(t) // not created: the first writer creates it
	var log logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	const openers = 8
	stores := make([]*postgres.Store, openers)
	errs := make([]error, openers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range openers {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(ctx(), url, &postgres.Options{Schema: schema, Logger: logger})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if n := strings.Count(log.String(), "set up the database schema"); n != 1 {
		t.Errorf("%d openers set up the schema, want 1; log:\n%s", n, log.String())
	}
	var rows, max int
	if err := conn.QueryRow(ctx(), `SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != max || rows < 1 {
		t.Errorf("schema_migrations holds %d rows up to version %d, want one per migration", rows, max)
	}
	if got := strings.Join(tables(t, conn, schema), " "); got != "records schema_migrations" {
		t.Errorf("tables %q, want records and schema_migrations", got)
	}
	// A writer opening the schema again changes nothing.
	log = logtest.Buffer{}
	open(t, schema, &postgres.Options{Logger: logger})
	if strings.Contains(log.String(), "set up") {
		t.Errorf("a writer on a current schema migrated it again: %s", log.String())
	}
}

// TestReadOnly: a read-only store sets up nothing: on a database where no
// writer ran it fails with ErrNoSchema and leaves no schema or table
// behind; on a set-up schema it reads, and every write fails with
// ErrReadOnly, refused by the server too.
func TestReadOnly(t *testing.T) {
	url := pgtest.URL(t)
	conn := pgtest.Conn(t)
	missing, empty := pgtest.Name(t), pgtest.Schema(t)
	for _, schema := range []string{missing, empty} {
		_, err := postgres.Open(ctx(), url, &postgres.Options{Schema: schema, ReadOnly: true, Logger: quiet})
		if !errors.Is(err, postgres.ErrNoSchema) {
			t.Errorf("read-only Open on schema %s where no writer ran = %v, want ErrNoSchema", schema, err)
		}
	}
	if schemaExists(t, conn, missing) {
		t.Errorf("read-only Open created schema %s", missing)
	}
	if got := tables(t, conn, empty); len(got) != 0 {
		t.Errorf("read-only Open created tables %q", got)
	}

	w := open(t, empty, nil)
	v, err := w.Put(ctx(), kind, conversation.Record{Key: "k", Data: []byte(`"kept"`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := postgres.Open(ctx(), url, &postgres.Options{Schema: empty, ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.Get(ctx(), kind, "k"); err != nil || string(got.Data) != `"kept"` || got.Version != v {
		t.Errorf("read-only Get = %+v, %v", got, err)
	}
	if recs, err := r.List(ctx(), kind, ""); err != nil || len(recs) != 1 {
		t.Errorf("read-only List = %d records, %v; want 1", len(recs), err)
	}
	if _, err := r.Put(ctx(), kind, conversation.Record{Key: "k", Data: []byte(`1`), Version: v}, 0); !errors.Is(err, conversation.ErrReadOnly) {
		t.Errorf("read-only Put = %v, want ErrReadOnly", err)
	}
	if err := r.Delete(ctx(), kind, "k", 0); !errors.Is(err, conversation.ErrReadOnly) {
		t.Errorf("read-only Delete = %v, want ErrReadOnly", err)
	}
	// Its sessions are read-only on the server's side as well.
	_, err = r.Pool().Exec(ctx(), `DELETE FROM `+pgx.Identifier{empty, "records"}.Sanitize())
	if err == nil || !strings.Contains(err.Error(), "25006") {
		t.Errorf("a write on a read-only store's connection = %v, want the server's refusal (SQLSTATE 25006)", err)
	}
	if got, err := w.Get(ctx(), kind, "k"); err != nil || got.Version != v {
		t.Errorf("after the read-only store's writes: %+v, %v; want the record unchanged", got, err)
	}
}

// TestSchemaRefused: a writer refuses, changing nothing, a schema of a newer
// mombot and one whose records table is another program's; a reader
// refuses the newer one too.
func TestSchemaRefused(t *testing.T) {
	url := pgtest.URL(t)
	conn := pgtest.Conn(t)
	newer, foreign := pgtest.Schema(t), pgtest.Schema(t)
	open(t, newer, nil).Close()
	if _, err := conn.Exec(ctx(), `INSERT INTO `+pgx.Identifier{newer, "schema_migrations"}.Sanitize()+` (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx(), `CREATE TABLE `+pgx.Identifier{foreign, "records"}.Sanitize()+` (id int)`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		schema   string
		readOnly bool
		want     error
	}{
		{newer, false, postgres.ErrSchemaTooNew},
		{newer, true, postgres.ErrSchemaTooNew},
		{foreign, false, postgres.ErrSchemaUnknown},
	} {
		_, err := postgres.Open(ctx(), url, &postgres.Options{Schema: tt.schema, ReadOnly: tt.readOnly, Logger: quiet})
		if !errors.Is(err, tt.want) {
			t.Errorf("Open(schema %s, read-only %t) = %v, want %v", tt.schema, tt.readOnly, err, tt.want)
		}
	}
	if got := strings.Join(tables(t, conn, foreign), " "); got != "records" {
		t.Errorf("the foreign schema now holds %q, want its records table alone", got)
	}
}

// TestSchemasApart: stores in two schemas of one database, one of a name
// that needs quoting, keep their records apart.
func TestSchemasApart(t *testing.T) {
	conn := pgtest.Conn(t)
	odd := pgtest.Name(t) + `-Odd "q"`
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{odd}.Sanitize()+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	a, b := open(t, pgtest.Schema(t), nil), open(t, odd, nil)
	if b.Schema() != odd {
		t.Errorf("Schema() = %q, want %q", b.Schema(), odd)
	}
	if _, err := a.Put(ctx(), kind, conversation.Record{Key: "k", Data: []byte(`"a"`)}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx(), kind, "k"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("a record of one schema is seen in the other: %v", err)
	}
	if _, err := b.Put(ctx(), kind, conversation.Record{Key: "k", Data: []byte(`"b"`)}, 0); err != nil {
		t.Errorf("the same key in another schema: %v", err)
	}
}

// TestConcurrentPools: writers on two stores (two connection pools, as two
// replicas have) that update one record on condition never lose an update,
// and no two values the record held share a version.
func TestConcurrentPools(t *testing.T) {
	schema := pgtest.Schema(t)
	stores := []*postgres.Store{open(t, schema, nil), open(t, schema, nil)}
	const workers, adds = 8, 40
	var mu sync.Mutex
	versions := map[int64]int{} // version -> the count it was given to
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := stores[w%2]
			for range adds {
				for {
					r, err := s.Get(ctx(), kind, "counter")
					if err != nil && !errors.Is(err, conversation.ErrNotFound) {
						errs <- err
						return
					}
					var n int
					fmt.Sscan(string(r.Data), &n)
					v, err := s.Put(ctx(), kind, conversation.Record{Key: "counter", Data: fmt.Append(nil, n+1), Version: r.Version}, 0)
					if err == nil {
						mu.Lock()
						if prev, dup := versions[v]; dup {
							errs <- fmt.Errorf("version %d given to counts %d and %d", v, prev, n+1)
						}
						versions[v] = n + 1
						mu.Unlock()
						break
					}
					if !errors.Is(err, conversation.ErrConflict) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := stores[0].Get(ctx(), kind, "counter")
	if err != nil || string(r.Data) != fmt.Sprint(workers*adds) {
		t.Fatalf("counter = %s, %v; want %d", r.Data, err, workers*adds)
	}
	if len(versions) != workers*adds {
		t.Errorf("%d versions for %d writes", len(versions), workers*adds)
	}
}

// TestBytesExact: data comes back as it was given, also what a JSON column
// would rewrite (spacing, key order, duplicate keys, escapes, number forms)
// and bytes that are no text at all.
func TestBytesExact(t *testing.T) {
	s := open(t, pgtest.Schema(t), nil)
	for i, data := range []string{
		`{ "b" : 1,  "a":[1.50, 2E3, -0.0], "a": "dup" }`,
		`"caf\u00e9 \ud83c\udf2e \/ \u0000"`,
		"\x00\xff\xfe binary",
		"",
	} {
		key := fmt.Sprint("k", i)
		if _, err := s.Put(ctx(), kind, conversation.Record{Key: key, Data: []byte(data)}, 0); err != nil {
			t.Fatal(err)
		}
		r, err := s.Get(ctx(), kind, key)
		if err != nil || string(r.Data) != data {
			t.Errorf("Get = %q, %v; want %q", r.Data, err, data)
		}
	}
}

// TestOpenErrors: what Open says about a server it cannot reach, a database
// that is not there and a URL that does not parse names what is wrong and
// never the password.
func TestOpenErrors(t *testing.T) {
	good, err := neturl.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-pw"
	noDB := *good
	noDB.User = neturl.UserPassword(cmp.Or(good.User.Username(), "postgres"), secret)
	noDB.Path = "/mombot_no_such_database"
	tests := []struct {
		name, url string
		want      error  // nil: any error
		says      string // part of the message
	}{
		{"refused", "postgres://mombot:" + secret + "@127.0.0.1:1/mombot?sslmode=disable", postgres.ErrUnreachable, "127.0.0.1:1"},
		{"no such database", noDB.String(), nil, "mombot_no_such_database"},
		{"bad port", "postgres://mombot:" + secret + "@db.example:port/mombot", nil, "cannot parse"},
		{"bad port, password in the query", "postgres://db.example:port/mombot?password=" + secret, nil, "cannot parse"},
		{"key=value", "host=db.example port=port password=" + secret, nil, "cannot parse"},
		{"short password", "postgres://mombot:pw@db.example:port/mombot", nil, "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := postgres.Open(ctx(), tt.url, &postgres.Options{Logger: quiet, ConnectTimeout: 2 * time.Second})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
			if errors.Is(err, postgres.ErrUnreachable) != (tt.want == postgres.ErrUnreachable) {
				t.Errorf("Open = %v: unreachable is %t", err, errors.Is(err, postgres.ErrUnreachable))
			}
			if msg := err.Error(); !strings.Contains(msg, tt.says) || strings.Contains(msg, secret) || strings.Contains(msg, ":pw@") {
				t.Errorf("Open = %q: want %q in it and no password", msg, tt.says)
			}
		})
	}
}

// TestErrorsMaskPhones: an error about a record names its kind and its key
// with the phone number masked.
func TestErrorsMaskPhones(t *testing.T) {
	s := open(t, pgtest.Schema(t), nil)
	const p = "+14155551234"
	v, err := s.Put(ctx(), conversation.Conversations, conversation.Record{Key: p, Data: []byte(`{}`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, putErr := s.Put(ctx(), conversation.Conversations, conversation.Record{Key: p, Data: []byte(`{}`)}, 0)
	_, getErr := s.Get(ctx(), conversation.UsageDays, "2026-02-24/"+p)
	for _, tt := range []struct {
		err  error
		want error
	}{
		{putErr, conversation.ErrConflict},
		{getErr, conversation.ErrNotFound},
		{s.Delete(ctx(), conversation.Conversations, p, v+1), conversation.ErrConflict},
		{s.Delete(ctx(), conversation.Recent, p, 0), conversation.ErrNotFound},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%v: want %v", tt.err, tt.want)
		}
		if msg := fmt.Sprint(tt.err); strings.Contains(msg, "4155551234") || !strings.Contains(msg, "1234") {
			t.Errorf("%q: want the phone masked", msg)
		}
	}
}

// TestRedact: a connection string fit for a message has no password, in
// any of the places a connection string may hold one, and keeps the rest.
func TestRedact(t *testing.T) {
	tests := []struct{ conn, want string }{
		{"postgres://mombot:s3cret@db:5432/mombot?sslmode=require", "postgres://mombot:xxxxx@db:5432/mombot?sslmode=require"},
		{"postgresql://mombot:s3%2Fcret@db/mombot", "postgresql://mombot:xxxxx@db/mombot"},
		{"postgres://db/mombot?password=s3cret&sslmode=disable", "postgres://db/mombot?password=xxxxx&sslmode=disable"},
		{"postgres://mombot@db/mombot", "postgres://mombot@db/mombot"},
		{"postgres://mombot:s3cret@db:port/mombot", "postgres://mombot:xxxxx@db:port/mombot"},
		{"postgres://mombot:s3:c@ret@db:port/mombot", "postgres://mombot:xxxxx@db:port/mombot"},
		{"host=db password=s3cret dbname=mombot", "host=db password=xxxxx dbname=mombot"},
		{"host=db password = 's3 cret' dbname=mombot", "host=db password = xxxxx dbname=mombot"},
	}
	for _, tt := range tests {
		if got := postgres.Redact(tt.conn); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.conn, got, tt.want)
		}
	}
}
