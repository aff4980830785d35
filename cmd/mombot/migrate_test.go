package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/pgtest"
	"github.com/mombot/mombot/phone"
)

// openStore opens the store at url as the commands do.
func openStore(ctx context.Context, url string, e *env) (conversation.Store, error) {
	return storeurl.Open(ctx, url, &storeurl.Options{Logger: e.log})
}

// quietEnv is an env for opening stores in tests.
func quietEnv() *env {
	return &env{getenv: func(string) string { return "" }, log: newLogger(&strings.Builder{}, "")}
}

// historyOf returns phone's messages in the store at url, as History gives them.
func historyOf(t *testing.T, url, phone string) []conversation.Message {
	t.Helper()
	s, err := openStore(context.Background(), url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, nil)
	h, err := mem.History(context.Background(), phone)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// saveTurn saves a turn now for phone in the store at url, as the server would.
func saveTurn(t *testing.T, url, phone string, msgs []conversation.Message) {
	t.Helper()
	s, err := openStore(context.Background(), url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, nil)
	if err := mem.SaveTurn(context.Background(), phone, msgs); err != nil {
		t.Fatal(err)
	}
}

// sameMessages fails unless got and want are the same messages, byte for byte.
func sameMessages(t *testing.T, where string, got, want []conversation.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", where, len(got), len(want))
	}
	for j := range got {
		if !got[j].Equal(want[j]) {
			t.Fatalf("%s: message %d changed:\n%s\n%s", where, j, got[j].Content, want[j].Content)
		}
	}
}

// migrateOK runs mombot history migrate and returns its summary line.
func migrateOK(t *testing.T, from, to string) string {
	t.Helper()
	out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", from, "--to", to)
	if code != 0 {
		t.Fatalf("migrate %s -> %s: exit %d\n%s%s", from, to, code, out, errOut)
	}
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "100%") {
		t.Errorf("a progress bar was drawn on stderr that is not a terminal: %q", errOut)
	}
	return out
}

// migrateChain copies file -> each store in via -> file again, and checks
// every hop keeps the histories byte for byte and re-running changes nothing.
func migrateChain(t *testing.T, via ...string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	src := "file:" + path
	now := time.Now()
	seed(t, path, now, "+14155551234",
		storetest.ToolTurn("find chicken", "toolu_1", "1. lemon", "1. Lemon chicken"),
		storetest.TextTurn("number 1?", "30 minutes"))
	seed(t, path, now, "+14155555678", storetest.TextTurn("hi", "hello"))
	seed(t, path, now.Add(-2*time.Hour), "+19990000000", storetest.TextTurn("old", "gone"))
	want := map[string][]conversation.Message{
		"+14155551234": historyOf(t, src, "+14155551234"),
		"+14155555678": historyOf(t, src, "+14155555678"),
	}
	chain := append([]string{src}, via...)
	chain = append(chain, "file:"+filepath.Join(dir, "back.json"))
	for i := 1; i < len(chain); i++ {
		out := migrateOK(t, chain[i-1], chain[i])
		if !strings.Contains(out, "copied 2 conversations") {
			t.Fatalf("first run: %s", out)
		}
		if expired := i == 1; expired != strings.Contains(out, "1 expired") {
			t.Errorf("first run from %s: %s; want 1 expired only from the first store", chain[i-1], out)
		}
		// Safe to re-run: nothing more is copied.
		if out := migrateOK(t, chain[i-1], chain[i]); !strings.Contains(out, "copied 0 conversations") || !strings.Contains(out, "2 already there") {
			t.Fatalf("second run: %s", out)
		}
		for phone, msgs := range want {
			sameMessages(t, chain[i]+" "+phone, historyOf(t, chain[i], phone), msgs)
		}
		if h := historyOf(t, chain[i], "+19990000000"); len(h) != 0 {
			t.Fatalf("%s: an expired conversation was copied", chain[i])
		}
	}
}

func TestMigrateFileSQLiteFile(t *testing.T) {
	migrateChain(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
}

// testRedisURL returns MOMBOT_TEST_REDIS_URL with a key prefix of the
// test's own, whose conversations are deleted when the test ends, or skips.
func testRedisURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MOMBOT_TEST_REDIS_URL")
	if base == "" {
		t.Skip("set MOMBOT_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the Redis leg of the migration")
	}
	url := withQuery(t, base, "prefix", "mombottest:migrate:"+rand.Text()[:12]+":")
	t.Cleanup(func() { cleanRedis(t, url) })
	return url
}

// testPostgresURL returns MOMBOT_TEST_POSTGRES_URL with a schema of the
// test's own, dropped when the test ends, or skips.
func testPostgresURL(t *testing.T) string {
	t.Helper()
	return withQuery(t, pgtest.URL(t), "schema", pgtest.Name(t))
}

// testStores makes, for each kind of store, a store URL of the test's own:
// a file or SQLite database in a folder of the test's, a Redis key prefix
// or a PostgreSQL schema deleted when it ends (skipping without the
// server's variable).
var testStores = map[string]func(t *testing.T) string{
	"file":     func(t *testing.T) string { return "file:" + filepath.Join(t.TempDir(), "conversations.json") },
	"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "mombot.db") },
	"redis":    testRedisURL,
	"postgres": testPostgresURL,
}

// withQuery returns url with the query parameter key set to value, whether
// or not url has a query already.
func withQuery(t *testing.T, url, key, value string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestWithQuery(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"redis://h:1/0", "redis://h:1/0?prefix=p%3A"},
		{"redis://h:1/0?read_timeout=2s", "redis://h:1/0?prefix=p%3A&read_timeout=2s"},
	} {
		if got := withQuery(t, tt.url, "prefix", "p:"); got != tt.want {
			t.Errorf("withQuery(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

// TestMigrateRoundTrip is the round trip: file -> sqlite -> redis -> file.
func TestMigrateRoundTrip(t *testing.T) {
	migrateChain(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"), testRedisURL(t))
}

// cleanRedis deletes every conversation in the Redis store at url.
func cleanRedis(t *testing.T, url string) {
	s, err := openStore(context.Background(), url, quietEnv())
	if err != nil {
		t.Log(err)
		return
	}
	defer s.Close()
	for _, kind := range conversation.Kinds {
		recs, _ := s.List(context.Background(), kind, "")
		for _, r := range recs {
			s.Delete(context.Background(), kind, r.Key, 0)
		}
	}
}

// TestMigrateKeepsNewerTurns: after the server has moved to the new store
// and saved turns there, migrating again does not roll those conversations
// back to the old store's copy.
func TestMigrateKeepsNewerTurns(t *testing.T) {
	targets := map[string]func(t *testing.T) string{
		"file":   func(t *testing.T) string { return "file:" + filepath.Join(t.TempDir(), "new.json") },
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "new.db") },
		"redis":  testRedisURL,
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			to := target(t)
			path := filepath.Join(t.TempDir(), "old.json")
			from := "file:" + path
			now := time.Now()
			seed(t, path, now.Add(-time.Minute), "+14155551234", storetest.TextTurn("before the move", "ok"))
			seed(t, path, now.Add(-time.Minute), "+14155555678", storetest.TextTurn("untouched", "ok"))
			migrateOK(t, from, to)

			saveTurn(t, to, "+14155551234", storetest.TextTurn("after the move", "noted"))
			want := historyOf(t, to, "+14155551234")
			if len(want) != 4 {
				t.Fatalf("the target holds %d messages after a saved turn, want 4", len(want))
			}
			out := migrateOK(t, from, to)
			if !strings.Contains(out, "copied 0 conversations") || !strings.Contains(out, "1 newer in the target") || !strings.Contains(out, "1 already there") {
				t.Errorf("second run: %s", out)
			}
			sameMessages(t, "the continued conversation", historyOf(t, to, "+14155551234"), want)
		})
	}
}

// TestMigrateCompletesPartialCopy: a target conversation at the source's
// last activity but with fewer turns (a copy interrupted by a crash, with a
// store that cannot replace atomically) is completed by the next run.
func TestMigrateCompletesPartialCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.json")
	from, to := "file:"+path, "sqlite:"+filepath.Join(t.TempDir(), "new.db")
	seed(t, path, time.Now(), "+14155551234", storetest.TextTurn("one", "1"), storetest.TextTurn("two", "2"))
	want := historyOf(t, from, "+14155551234")

	src, err := openStore(context.Background(), from, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	srcMem, _ := conversation.New(src, nil)
	c, err := srcMem.Load(context.Background(), "+14155551234")
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := openStore(context.Background(), to, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	dstMem, _ := conversation.New(dst, nil)
	c.Turns, c.Version = c.Turns[:1], 0
	if err := dstMem.Replace(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	dst.Close()

	if out := migrateOK(t, from, to); !strings.Contains(out, "copied 1 conversation from") {
		t.Errorf("run over a partial copy: %s", out)
	}
	sameMessages(t, "the completed copy", historyOf(t, to, "+14155551234"), want)
}

// TestMigrateEmptyAfterRepair: a conversation of which repair left no turn
// is neither copied nor counted as copied, and does not erase the target's.
func TestMigrateEmptyAfterRepair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.json")
	last := time.Now().Format("2006-01-02T15:04:05.000000")
	file := fmt.Sprintf(`{"+14155551234": {"last_active": %q, "turns": [{"messages": [{"role": "assistant", "content": "a reply to nothing"}]}]}}`, last)
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	to := "sqlite:" + filepath.Join(dir, "new.db")
	out := migrateOK(t, "file:"+path, to)
	if !strings.Contains(out, "copied 0 conversations") || !strings.Contains(out, "1 empty") {
		t.Errorf("migrate of a conversation without a valid turn: %s", out)
	}
	if h := historyOf(t, to, "+14155551234"); len(h) != 0 {
		t.Errorf("the target holds %d messages, want none", len(h))
	}
}

func TestMigrateBadInput(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--from", a}, "--to"},
		{[]string{"--from", a, "--to", a}, "same store"},
		{[]string{"--from", a, "--to", "file:" + a}, "same store"},
		{[]string{"--from", a, "--to", "file:" + filepath.Join(dir, ".", "sub", "..", "a.json")}, "same store"},
		{[]string{"--from", "file:" + link, "--to", a}, "same store"},
		{[]string{"--from", "sqlite:" + a, "--to", a}, "same store"},
		{[]string{"--from", "redis://localhost/0", "--to", "redis://127.0.0.1:6379"}, "same store"},
		{[]string{"--from", "redis://h:6379/0?prefix=p:", "--to", "rediss://h/0?prefix=p:"}, "same store"},
		{[]string{"--from", a, "--to", "ftp://x"}, "unknown kind"},
		{[]string{"--from", a, "--to", "sqlite:"}, "needs a path"},
	}
	for _, tt := range tests {
		_, errOut, code := runCmd(t, nil, append([]string{"history", "migrate"}, tt.args...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("migrate %q: exit %d, %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	if _, err := os.Stat(a); err == nil {
		t.Error("a refused migration created the file")
	}
}

// TestMigrateConflict: the server has moved to the target and saved a turn
// there, but the old server went on and saved a later one in the source.
// Copying would drop the target's turn, which someone was answered with:
// migrate reports the conflict and keeps the target, unless --force.
func TestMigrateConflict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.json")
	from, to := "file:"+path, "sqlite:"+filepath.Join(dir, "new.db")
	const phone = "+14155551234"
	now := time.Now()
	seed(t, path, now.Add(-10*time.Minute), phone, storetest.TextTurn("before the move", "ok"))
	migrateOK(t, from, to)

	dst, err := openStore(context.Background(), to, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	dstMem, _ := conversation.New(dst, &conversation.Options{Timeout: time.Hour, Now: func() time.Time { return now.Add(-5 * time.Minute) }})
	if err := dstMem.SaveTurn(context.Background(), phone, storetest.TextTurn("on the new server", "noted")); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	seed(t, path, now.Add(-time.Minute), phone, storetest.TextTurn("on the old server, later", "ok"))
	want := historyOf(t, to, phone)

	out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", from, "--to", to)
	if code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "copied 0 conversations") || !strings.Contains(out, "1 in conflict") {
		t.Errorf("migrate over a conflict: %s", out)
	}
	if !strings.Contains(errOut, maskPhone(phone)) || !strings.Contains(errOut, "--force") || strings.Contains(errOut, phone) {
		t.Errorf("stderr does not name the conflict (masked) and --force: %q", errOut)
	}
	sameMessages(t, "the target after a conflict", historyOf(t, to, phone), want)

	out, errOut, code = runCmd(t, nil, "history", "migrate", "--force", "--from", from, "--to", to)
	if code != 0 || !strings.Contains(out, "copied 1 conversation from") {
		t.Fatalf("migrate --force: exit %d\n%s%s", code, out, errOut)
	}
	sameMessages(t, "the target after --force", historyOf(t, to, phone), historyOf(t, from, phone))
}

// TestMigrateSourceMustExist: a mistyped source is an error, and creates
// nothing, rather than an empty store that migrate copies nothing from.
func TestMigrateSourceMustExist(t *testing.T) {
	dir := t.TempDir()
	to := "sqlite:" + filepath.Join(dir, "new.db")
	for _, from := range []string{
		filepath.Join(dir, "typo", "conversations.json"),
		"file:" + filepath.Join(dir, "typo.json"),
		"sqlite:" + filepath.Join(dir, "typo", "m.db"),
	} {
		out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", from, "--to", to)
		if code == 0 || !strings.Contains(errOut, "typo") {
			t.Errorf("migrate --from %s: exit %d, %q %q; want an error naming the missing store", from, code, out, errOut)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Errorf("a failed migrate created %v", left)
	}
}

// maskPhone is phone.Mask, for tests where phone is a number.
var maskPhone = phone.Mask

// openInbox opens the inbox serve keeps with the store at url, closed
// when the test ends; on Redis its keys are deleted then.
func openInbox(t *testing.T, url string) delivery.Inbox {
	t.Helper()
	ctx := context.Background()
	snd, err := openSenders(ctx, url, quietEnv().log)
	if err != nil {
		t.Fatal(err)
	}
	in, err := snd.inbox(ctx, 0, quietEnv().log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
		if snd.rdb != nil {
			keys, _ := snd.rdb.Keys(ctx, snd.prefix+"*").Result()
			if len(keys) > 0 {
				snd.rdb.Del(ctx, keys...)
			}
		}
		snd.close()
	})
	return in
}

// takeQueues returns the ids queued in in, per sender and in order,
// emptying the queues.
func takeQueues(t *testing.T, in delivery.Inbox) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := in.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		var ids []string
		for {
			m, ok, err := in.Peek(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			ids = append(ids, m.ID)
			if err := in.Done(ctx, k, m.ID); err != nil {
				t.Fatal(err)
			}
		}
		out[k] = strings.Join(ids, ",")
	}
	return out
}

// TestMigrateInboxAndLists: between every kind of store, history migrate
// merges the family's lists into the target's, warns of the messages
// waiting in the source's inbox and leaves them there, and with --inbox
// moves them, each sender's in order, to the target's inbox, leaving them
// handled in the source so that neither answers them twice.
func TestMigrateInboxAndLists(t *testing.T) {
	file, sqlite, redis, pg := testStores["file"], testStores["sqlite"], testStores["redis"], testStores["postgres"]
	for _, tt := range []struct {
		name     string
		from, to func(t *testing.T) string
	}{
		{"file to sqlite", file, sqlite},
		{"sqlite to redis", sqlite, redis},
		{"redis to postgres", redis, pg},
		{"postgres to file", pg, file},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			from, to := tt.from(t), tt.to(t)
			for url, item := range map[string]string{from: "Milk", to: "milk"} {
				saveTurn(t, url, "+14155551234", storetest.TextTurn("hi", "hello"))
				s, err := openStore(ctx, url, quietEnv())
				if err != nil {
					t.Fatal(err)
				}
				mem, _ := conversation.New(s, nil)
				err = mem.UpdateFamilyLists(ctx, func(l *conversation.FamilyLists) error {
					l.Add("grocery", []conversation.ListItem{{Text: item, AddedAt: time.Now()}, {Text: "from " + url, AddedAt: time.Now()}})
					return nil
				})
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			src, dst := openInbox(t, from), openInbox(t, to)
			for _, m := range []delivery.Message{
				{ID: "wamid.a1", Key: "+14155551234", Body: []byte(`{"text":"a1"}`)},
				{ID: "wamid.b1", Key: "+14155555678", Body: []byte(`{"text":"b1"}`)},
				{ID: "wamid.a2", Key: "+14155551234", Body: []byte(`{"text":"a2"}`)},
			} {
				if _, err := src.Push(ctx, m); err != nil {
					t.Fatal(err)
				}
			}

			out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", from, "--to", to)
			if code != 0 || !strings.Contains(out, "1 item merged into the lists") || !strings.Contains(errOut, "2 senders have messages waiting in the source's inbox") {
				t.Fatalf("migrate: exit %d, %q %q; want the lists merged and a warning of the 2 senders waiting", code, out, errOut)
			}
			if keys, err := src.Keys(ctx); err != nil || len(keys) != 2 {
				t.Fatalf("after migrate without --inbox the source's inbox has queues for %q, %v; want both left", keys, err)
			}
			for i, want := range []string{"moved 3 messages", "moved 0 messages"} {
				out, errOut, code = runCmd(t, nil, "history", "migrate", "--from", from, "--to", to, "--inbox")
				if code != 0 || !strings.Contains(out, want) || strings.Contains(errOut, "waiting") {
					t.Fatalf("migrate --inbox, run %d: exit %d, %q %q; want %q", i+1, code, out, errOut, want)
				}
			}
			if got := takeQueues(t, src); len(got) != 0 {
				t.Errorf("the source's inbox still queues %q", got)
			}
			if dup, err := src.Push(ctx, delivery.Message{ID: "wamid.a1", Key: "+14155551234", Body: []byte(`{}`)}); err != nil || !dup[0] {
				t.Errorf("a redelivery of a moved message to the source: duplicate %v, %v; want it known as handled", dup, err)
			}
			want := map[string]string{"+14155551234": "wamid.a1,wamid.a2", "+14155555678": "wamid.b1"}
			if got := takeQueues(t, dst); !maps.Equal(got, want) {
				t.Errorf("the target's inbox queues %q, want %q", got, want)
			}
			s, err := openStore(ctx, to, quietEnv())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mem, _ := conversation.New(s, nil)
			l, err := mem.FamilyLists(ctx)
			var texts []string
			for _, it := range l.Lists["grocery"] {
				texts = append(texts, it.Text)
			}
			if want := "milk,from " + to + ",from " + from; err != nil || strings.Join(texts, ",") != want {
				t.Errorf("the target's grocery list = %q, %v; want %q", texts, err, want)
			}
		})
	}
}

// TestMigrateSharedInbox: two stores in one folder share serve's inbox
// file, so migrating between them moves nothing and warns of nothing.
func TestMigrateSharedInbox(t *testing.T) {
	dir := t.TempDir()
	from, to := "file:"+filepath.Join(dir, "conversations.json"), "sqlite:"+filepath.Join(dir, "m.db")
	saveTurn(t, from, "+14155551234", storetest.TextTurn("hi", "hello"))
	in := openInbox(t, from)
	if _, err := in.Push(context.Background(), delivery.Message{ID: "wamid.a1", Key: "+14155551234", Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--inbox"}} {
		out, errOut, code := runCmd(t, nil, append([]string{"history", "migrate", "--from", from, "--to", to}, args...)...)
		if code != 0 || strings.Contains(out, "moved") || strings.Contains(errOut, "inbox") {
			t.Errorf("migrate %q: exit %d, %q %q; want the conversations copied and nothing said of the inbox", args, code, out, errOut)
		}
	}
	if got := takeQueues(t, in); got["+14155551234"] != "wamid.a1" {
		t.Errorf("the shared inbox queues %q, want the message still there once", got)
	}
}

// TestMigrateInboxHandled: history migrate --inbox takes the ids of the
// messages the source answered to the target, with their senders, so that
// a late redelivery of one to the new deployment is a duplicate, not
// answered again, and mombot erase on the target removes it; a message it
// moves stays waiting in the target.
func TestMigrateInboxHandled(t *testing.T) {
	sqlite, redis, pg := testStores["sqlite"], testStores["redis"], testStores["postgres"]
	for _, tt := range []struct {
		name     string
		from, to func(t *testing.T) string
	}{
		{"sqlite to postgres", sqlite, pg},
		{"postgres to redis", pg, redis},
		{"redis to sqlite", redis, sqlite},
		{"postgres to sqlite", pg, sqlite},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			from, to := tt.from(t), tt.to(t)
			saveTurn(t, from, "+14155551234", storetest.TextTurn("hi", "hello"))
			src, dst := openInbox(t, from), openInbox(t, to)
			answered := delivery.Message{ID: "wamid.answered", Key: "+14155551234", Body: []byte(`{"text":"a1"}`)}
			waiting := delivery.Message{ID: "wamid.waiting", Key: "+14155555678", Body: []byte(`{"text":"b1"}`)}
			if _, err := src.Push(ctx, answered, waiting); err != nil {
				t.Fatal(err)
			}
			if err := src.Done(ctx, answered.Key, answered.ID); err != nil {
				t.Fatal(err)
			}
			for i, want := range []string{
				"moved 1 message waiting in the inbox and 1 id of a message handled in the last 7 days",
				"moved 0 messages waiting in the inbox and 0 ids of messages handled in the last 7 days",
			} {
				out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", from, "--to", to, "--inbox")
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("migrate --inbox, run %d: exit %d, %q %q; want %q", i+1, code, out, errOut, want)
				}
			}
			for _, m := range []delivery.Message{answered, waiting} {
				if dup, err := dst.Push(ctx, m); err != nil || !dup[0] {
					t.Errorf("a redelivery of %s to the target: duplicate %v, %v; want it known", m.ID, dup, err)
				}
			}
			if got, want := takeQueues(t, dst), map[string]string{waiting.Key: waiting.ID}; !maps.Equal(got, want) {
				t.Errorf("the target's inbox queues %q, want %q", got, want)
			}
			if _, handled, err := dst.Erase(ctx, answered.Key); err != nil || handled != 1 {
				t.Errorf("Erase of the answered sender on the target = %d handled, %v; want its id", handled, err)
			}
		})
	}
}
