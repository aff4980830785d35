package storeurl_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"maps"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/pgtest"
	"github.com/mombot/mombot/internal/redistest"
)

var writeRelease = flag.String("write-release", "", "write the data of the current version as the fixture of the named release (for example v0.2.0) and stop")

// releases are the tagged releases whose data every later version reads.
// Each has a fixture in testdata/<release>: a JSON file store, an SQLite
// database, a PostgreSQL dump and a Redis dump, written by that release
// with releaseData.
var releases = []string{"v0.1.0"}

// releaseAt is the clock of the fixtures' data.
var releaseAt = time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)

const (
	releaseErin  = "+14155551234"
	releaseJason = "+14155555678"
)

// releaseData saves what every fixture holds: two people's conversations
// (a tool round, an image placeholder), recent messages and usage.
func releaseData(t *testing.T, mem *conversation.Memory) {
	t.Helper()
	ctx := context.Background()
	image := conversation.Message{Role: conversation.RoleUser, Content: []byte(`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"[From Erin]: what is this?"}]`)}
	turns := map[string][][]conversation.Message{
		releaseErin: {
			storetest.ToolTurn("[From Erin]: find me a chicken dinner", "toolu_01A", "1. Lemon chicken 2. Chicken tacos", "Here are two: lemon chicken and chicken tacos."),
			{image, conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("A recipe card for tacos."))},
		},
		releaseJason: {storetest.TextTurn("[From Jason]: what's for dinner?", "Chicken tacos, Erin picked them.")},
	}
	for _, p := range []string{releaseErin, releaseJason} {
		for _, turn := range turns[p] {
			if err := mem.SaveTurn(ctx, p, turn); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mem.Remember(ctx, releaseErin,
		conversation.RecentMessage{ID: "wamid.in1", Role: conversation.RoleUser, Text: "find me a chicken dinner", At: releaseAt},
		conversation.RecentMessage{ID: "wamid.out1", Role: conversation.RoleAssistant, Text: "Here are two: lemon chicken and chicken tacos.", At: releaseAt}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{releaseErin, releaseJason} {
		u := conversation.Usage{Messages: int64(i + 1), Tokens: conversation.Tokens{Calls: 2, InputTokens: 120, CacheWrite5mTokens: 900, CacheReadTokens: 3000, OutputTokens: 250}}
		if err := mem.AddUsage(ctx, p, releaseAt.Add(-24*time.Hour), u); err != nil {
			t.Fatal(err)
		}
	}
}

// checkReleaseData checks that mem reads what releaseData saved.
func checkReleaseData(t *testing.T, mem *conversation.Memory) {
	t.Helper()
	ctx := context.Background()
	sums, err := mem.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].Phone != releaseErin || sums[0].Turns != 2 || sums[1].Turns != 1 || !sums[0].LastActive.Equal(releaseAt) {
		t.Fatalf("conversations %+v, want Erin's 2 turns and Jason's 1, last active %v", sums, releaseAt)
	}
	h, err := mem.History(ctx, releaseErin)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 6 || !strings.Contains(string(h[4].Content), "[Image sent: photo]") || h[1].Text() != "Let me look." {
		t.Fatalf("Erin's history:\n%s", dumpMessages(h))
	}
	if m, err := mem.Recall(ctx, releaseErin, "wamid.out1"); err != nil || m.Text != "Here are two: lemon chicken and chicken tacos." {
		t.Fatalf("recent message: %+v, %v", m, err)
	}
	days, err := mem.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 2 || days[0].Phone != releaseErin || days[1].Usage.Messages != 2 || days[0].Usage.CacheReadTokens != 3000 {
		t.Fatalf("usage %+v", days)
	}
}

func dumpMessages(msgs []conversation.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
	}
	return b.String()
}

func releaseMemory(t *testing.T, s conversation.Store) *conversation.Memory {
	t.Helper()
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return releaseAt }, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// copyDir copies the files of src into a new temporary folder, so that a
// store opened on a fixture never changes it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestReleasedData: the data each tagged release wrote, in every store it
// offered, is read by this version; with -write-release, this version's
// data is written as a new release's fixture instead.
func TestReleasedData(t *testing.T) {
	if *writeRelease != "" {
		writeFixture(t, filepath.Join("testdata", *writeRelease))
		return
	}
	ctx := context.Background()
	for _, rel := range releases {
		dir := filepath.Join("testdata", rel)
		t.Run(rel+"/file", func(t *testing.T) {
			s, err := storeurl.Open(ctx, "file:"+filepath.Join(copyDir(t, filepath.Join(dir, "file")), "conversations.json"), &storeurl.Options{MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkReleaseData(t, releaseMemory(t, s))
		})
		t.Run(rel+"/sqlite", func(t *testing.T) {
			s, err := storeurl.Open(ctx, "sqlite:"+filepath.Join(copyDir(t, filepath.Join(dir, "sqlite")), "mombot.db"), &storeurl.Options{MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkReleaseData(t, releaseMemory(t, s))
		})
		t.Run(rel+"/postgres", func(t *testing.T) {
			schema := pgtest.Name(t)
			dump, err := os.ReadFile(filepath.Join(dir, "postgres.sql"))
			if err != nil {
				t.Fatal(err)
			}
			conn := pgtest.Conn(t)
			if _, err := conn.Exec(ctx, strings.ReplaceAll(string(dump), pgSchemaMark, schema)); err != nil {
				t.Fatalf("load %s: %v", filepath.Join(dir, "postgres.sql"), err)
			}
			s, err := storeurl.Open(ctx, postgresURL(t, schema), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkReleaseData(t, releaseMemory(t, s))
		})
		t.Run(rel+"/redis", func(t *testing.T) {
			prefix := redistest.Prefix(t)
			loadRedisDump(t, filepath.Join(dir, "redis.txt"), prefix)
			s, err := storeurl.Open(ctx, redistest.URL(t)+"?prefix="+prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkReleaseData(t, releaseMemory(t, s))
		})
	}
}

// pgSchemaMark stands for the schema's name in a PostgreSQL fixture, a dump
// of one schema by pg_dump (--inserts --no-owner --no-privileges).
const pgSchemaMark = "mombot_release_schema"

// postgresURL is the test server's URL on schema.
func postgresURL(t *testing.T, schema string) string {
	u, err := neturl.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// A Redis dump is one line a key: the key without its prefix, then its hash
// fields and values (or, for a string, "=" and its value), each quoted as
// Go quotes strings.
func loadRedisDump(t *testing.T, path, prefix string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdb := redistest.Client(t)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var fields []string
		rest := sc.Text()
		for rest != "" {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			s, _ := strconv.Unquote(q)
			fields = append(fields, s)
			rest = strings.TrimPrefix(rest[len(q):], " ")
		}
		key := prefix + fields[0]
		if fields[1] == "=" {
			err = rdb.Set(context.Background(), key, fields[2], 0).Err()
		} else {
			err = rdb.HSet(context.Background(), key, fields[1:]).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// writeFixture writes releaseData in every store to dir.
func writeFixture(t *testing.T, dir string) {
	ctx := context.Background()
	for _, sub := range []string{"file", "sqlite"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, url := range []string{"file:" + filepath.Join(dir, "file", "conversations.json"), "sqlite:" + filepath.Join(dir, "sqlite", "mombot.db")} {
		s, err := storeurl.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		releaseData(t, releaseMemory(t, s))
		if err := s.Scrub(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(dir, "file", "conversations.json.lock"))

	schema := pgtest.Name(t)
	ps, err := storeurl.Open(ctx, postgresURL(t, schema), nil)
	if err != nil {
		t.Fatal(err)
	}
	releaseData(t, releaseMemory(t, ps))
	ps.Close()
	dump, err := exec.Command("pg_dump", "--dbname", strings.Split(pgtest.URL(t), "?")[0], "--schema", schema,
		"--inserts", "--no-owner", "--no-privileges", "--no-comments").Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var sqlOut strings.Builder
	for _, line := range strings.Split(string(dump), "\n") {
		// Session settings and psql's meta-commands are not the data.
		if strings.HasPrefix(line, "SET ") || strings.HasPrefix(line, "SELECT pg_catalog.set_config") || strings.HasPrefix(line, "\\") {
			continue
		}
		sqlOut.WriteString(line + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "postgres.sql"), []byte(strings.ReplaceAll(sqlOut.String(), schema, pgSchemaMark)), 0o644); err != nil {
		t.Fatal(err)
	}

	prefix := redistest.Prefix(t)
	s, err := storeurl.Open(ctx, redistest.URL(t)+"?prefix="+prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	releaseData(t, releaseMemory(t, s))
	rdb := redistest.Client(t)
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprint(&out, strconv.Quote(strings.TrimPrefix(k, prefix)))
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "hash":
			h := rdb.HGetAll(ctx, k).Val()
			for _, f := range slices.Sorted(maps.Keys(h)) {
				fmt.Fprintf(&out, " %s %s", strconv.Quote(f), strconv.Quote(h[f]))
			}
		case "string":
			fmt.Fprintf(&out, " %s %s", strconv.Quote("="), strconv.Quote(rdb.Get(ctx, k).Val()))
		default:
			t.Fatalf("%s: a %s, which the dump cannot hold", k, typ)
		}
		out.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "redis.txt"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
