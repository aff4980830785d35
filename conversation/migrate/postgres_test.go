package migrate_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/migrate"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/pgtest"
	"github.com/mombot/mombot/internal/redistest"
)

var quiet = slog.New(slog.DiscardHandler)

// deployment is what a family's store holds of every kind, as a server
// writes it: two conversations, the usage ledger of two days and recent
// messages.
type deployment struct {
	now    time.Time
	phones []string
	usage  []conversation.DailyUsage
	recent []conversation.RecentMessage
}

func newDeployment() *deployment {
	now := time.Now().Truncate(time.Microsecond)
	d := &deployment{now: now, phones: []string{"+14155551201", "+14155551202"}}
	for i, p := range d.phones {
		for day := range 2 {
			d.usage = append(d.usage, conversation.DailyUsage{
				Day:   conversation.UsageDay(now.AddDate(0, 0, day-1)),
				Phone: p,
				Usage: conversation.Usage{Messages: int64(i + day + 1), Tokens: conversation.Tokens{Calls: 2, InputTokens: int64(1000 * (i + 1))}},
			})
		}
		d.recent = append(d.recent,
			conversation.RecentMessage{ID: fmt.Sprintf("wamid.in.%d", i), Role: conversation.RoleUser, Text: "is there milk?", At: now.Add(-time.Minute)},
			conversation.RecentMessage{ID: fmt.Sprintf("wamid.out.%d", i), Role: conversation.RoleAssistant, Text: "yes, two litres", At: now.Add(-time.Minute)})
	}
	return d
}

func (d *deployment) memory(t *testing.T, s conversation.Store) *conversation.Memory {
	t.Helper()
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return d.now }})
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// write stores the deployment in s through a memory, as a server would.
func (d *deployment) write(t *testing.T, s conversation.Store) {
	t.Helper()
	ctx := context.Background()
	mem := d.memory(t, s)
	for i, p := range d.phones {
		for turn := range 3 {
			if err := mem.SaveTurn(ctx, p, storetest.TextTurn(fmt.Sprintf("[From %d]: turn %d", i, turn), "ok")); err != nil {
				t.Fatal(err)
			}
		}
		if err := mem.Remember(ctx, p, d.recent[2*i], d.recent[2*i+1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range d.usage {
		if err := mem.AddUsage(ctx, u.Phone, u.Day.Add(time.Hour), u.Usage); err != nil {
			t.Fatal(err)
		}
	}
}

// check checks that s holds the deployment: every conversation with its
// turns, the usage ledger and every recent message.
func (d *deployment) check(t *testing.T, s conversation.Store, where string) {
	t.Helper()
	ctx := context.Background()
	mem := d.memory(t, s)
	for i, p := range d.phones {
		c, err := mem.Load(ctx, p)
		if err != nil {
			t.Fatalf("%s: conversation of %s: %v", where, p, err)
		}
		var texts []string
		for _, tr := range c.Turns {
			texts = append(texts, tr.Messages[0].Text())
		}
		want := fmt.Sprintf("[From %d]: turn 0,[From %d]: turn 1,[From %d]: turn 2", i, i, i)
		if got := strings.Join(texts, ","); got != want || !c.LastActive.Equal(d.now) {
			t.Errorf("%s: conversation of %s: turns %q, last active %v; want %q, %v", where, p, got, c.LastActive, want, d.now)
		}
		for _, m := range d.recent[2*i : 2*i+2] {
			got, err := mem.Recall(ctx, p, m.ID)
			if err != nil || got.Text != m.Text || got.Role != m.Role || !got.At.Equal(m.At) {
				t.Errorf("%s: recent message %s of %s = %+v, %v; want %+v", where, m.ID, p, got, err, m)
			}
		}
	}
	usage, err := mem.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatalf("%s: usage: %v", where, err)
	}
	want := slices.SortedFunc(slices.Values(d.usage), func(a, b conversation.DailyUsage) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		return strings.Compare(a.Phone, b.Phone)
	})
	if !reflect.DeepEqual(usage, want) {
		t.Errorf("%s: usage\n%+v\nwant\n%+v", where, usage, want)
	}
}

// migrateURL copies the store at from to the store at to as `history
// migrate` does: the source opened read-only, and every conversation,
// usage day and recent message copied.
func migrateURL(t *testing.T, d *deployment, from, to string) {
	t.Helper()
	ctx := context.Background()
	src, err := storeurl.Open(ctx, from, &storeurl.Options{Logger: quiet, MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := storeurl.Open(ctx, to, &storeurl.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Now: func() time.Time { return d.now }})
	if err != nil {
		t.Fatalf("migrate %s to %s: %v", storeurl.Display(from), storeurl.Display(to), err)
	}
	if want := len(d.phones); r.Copied != want || r.Records != len(d.usage)+len(d.phones) {
		t.Errorf("migrate %s to %s: %+v, want %d conversations and %d records copied", storeurl.Kind(from), storeurl.Kind(to), r, want, len(d.usage)+len(d.phones))
	}
	d.check(t, dst, storeurl.Kind(to))
}

// openURL opens the store at url and closes it when the test ends.
func openURL(t *testing.T, url string) conversation.Store {
	t.Helper()
	s, err := storeurl.Open(context.Background(), url, &storeurl.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// postgresURL returns the test database's URL with a schema of the test's
// own.
func postgresURL(t *testing.T) string {
	t.Helper()
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "schema=" + pgtest.Name(t)
}

// TestMigratePostgres: history migrate moves a deployment from SQLite to
// PostgreSQL and back, and from Redis to PostgreSQL, with its
// conversations, usage ledger and recent messages.
func TestMigratePostgres(t *testing.T) {
	t.Run("SQLite to PostgreSQL and back", func(t *testing.T) {
		d := newDeployment()
		dir := t.TempDir()
		from, pg, back := "sqlite:"+filepath.Join(dir, "from.db"), postgresURL(t), "sqlite:"+filepath.Join(dir, "back.db")
		s := openURL(t, from)
		d.write(t, s)
		s.Close()
		migrateURL(t, d, from, pg)
		migrateURL(t, d, pg, back)
	})
	t.Run("Redis to PostgreSQL", func(t *testing.T) {
		d := newDeployment()
		from, pg := redistest.URL(t)+"?prefix="+redistest.Prefix(t), postgresURL(t)
		d.write(t, openURL(t, from))
		migrateURL(t, d, from, pg)
	})
	t.Run("PostgreSQL to Redis", func(t *testing.T) {
		d := newDeployment()
		pg, to := postgresURL(t), redistest.URL(t)+"?prefix="+redistest.Prefix(t)
		d.write(t, openURL(t, pg))
		migrateURL(t, d, pg, to)
	})
}
