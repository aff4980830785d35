package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/delivery"
)

// The person erased and another, whose data must stay. Their texts are
// unique so that a leftover byte of them can be searched for.
const (
	eraseGone     = "+14155550177"
	eraseGoneText = "zanzibar-lasagne-recipe"
	eraseKept     = "+14155550188"
	eraseKeptText = "quokka-pancake-recipe"
)

// seedErase stores, for both numbers, notes (seedLongMemory), a
// conversation, recent messages and usage on two recent days and one day
// old enough to be folded into the anonymous totals, sweeps once, and
// fills the inbox (seedInbox); the number to erase also has a summary.
func seedErase(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	s, err := openStore(ctx, url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clock := time.Now().Add(-time.Hour)
	mem, err := conversation.New(s, &conversation.Options{
		Now:       func() time.Time { return clock },
		Summarize: func(string) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	seedLongMemory(t, mem, func(d time.Duration) { clock = clock.Add(d) })
	now := time.Now()
	for phone, text := range map[string]string{eraseGone: eraseGoneText, eraseKept: eraseKeptText} {
		if err := mem.SaveTurn(ctx, phone, storetest.TextTurn("[From Erin]: "+text, "Here is the "+text)); err != nil {
			t.Fatal(err)
		}
		if err := mem.Remember(ctx, phone, conversation.RecentMessage{ID: "wamid." + text, Role: conversation.RoleUser, Text: text, At: now}); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{now, now.Add(-48 * time.Hour), now.Add(-500 * 24 * time.Hour)} {
			if err := mem.AddUsage(ctx, phone, at, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, OutputTokens: 7}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := mem.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	seedInbox(t, url)
}

// textSummarizer folds turns into a summary that quotes them, as a
// summary may.
type textSummarizer struct{}

func (textSummarizer) Summarize(_ context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
	var b strings.Builder
	for _, t := range in.Turns {
		for _, m := range t.Messages {
			b.WriteString(m.Text() + " ")
		}
	}
	return conversation.SummaryOutput{Text: "They talked about: " + b.String()}, nil
}

// seedLongMemory gives both numbers long-term memory: each writes a family
// note and a private one, and the number to erase has a running summary
// of an expired conversation, made while the clock stands an hour back;
// advance then moves the clock to now.
func seedLongMemory(t *testing.T, mem *conversation.Memory, advance func(time.Duration)) {
	t.Helper()
	ctx := context.Background()
	fam := conversation.Family{ID: conversation.DefaultFamilyID, Members: map[string]string{eraseGone: "Erin", eraseKept: "Jason"}, Claim: true}
	for phone, text := range map[string]string{eraseGone: eraseGoneText, eraseKept: eraseKeptText} {
		for _, scope := range []string{"family", "private"} {
			if _, _, err := mem.AddNote(ctx, fam, phone, conversation.NewNote{Text: scope + " note: " + text, Scope: scope}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mem.SaveTurn(ctx, eraseGone, storetest.TextTurn("[From Erin]: summary of "+eraseGoneText, "Noted")); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour)
	if ok, err := mem.Expire(ctx, eraseGone); err != nil || !ok {
		t.Fatalf("Expire = %v, %v; want the conversation an hour old expired", ok, err)
	}
	sum, err := mem.FoldSummary(ctx, eraseGone, textSummarizer{})
	if err != nil || !strings.Contains(sum.Text, eraseGoneText) {
		t.Fatalf("FoldSummary = %q, %v; want a summary quoting the turn", sum.Text, err)
	}
}

// seedInbox puts in serve's inbox for url, for both numbers, a message
// waiting and the id of one handled; the ids hold the numbers, as
// WhatsApp's do.
func seedInbox(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	snd, err := openSenders(context.Background(), url, quietEnv().log)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.close()
	inbox, err := snd.inbox(context.Background(), 0, quietEnv().log)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := inbox.(interface{ Close() error }); ok {
		defer c.Close()
	}
	for phone, text := range map[string]string{eraseGone: eraseGoneText, eraseKept: eraseKeptText} {
		m := delivery.Message{ID: "wamid.waiting." + phone, Key: phone, Body: []byte(`{"text":"` + text + `"}`)}
		if _, err := inbox.Push(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := inbox.Done(ctx, phone, "wamid.handled."+phone); err != nil {
			t.Fatal(err)
		}
	}
}

// leftovers returns the files under dir holding any of needles.
func leftovers(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(data, []byte(n)) {
				found = append(found, filepath.Base(path)+" holds "+n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// eraseGoneReport is what mombot erase prints for eraseGone once
// seedErase has seeded a store.
const eraseGoneReport = "erased " + eraseGone + ": conversations 1, recent 1, usage 2, notes 2, summaries 1, inbox messages 1, handled ids 1\n"

func TestEraseLeavesNoByte(t *testing.T) {
	digits := strings.TrimPrefix(eraseGone, "+")
	for _, kind := range []string{"file", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			url := kind + ":" + filepath.Join(dir, map[string]string{"file": "conversations.json", "sqlite": "mombot.db"}[kind])
			seedErase(t, url)
			if got := leftovers(t, dir, digits, eraseGoneText); len(got) == 0 {
				t.Fatalf("the seeded store holds none of the number's data: the test would prove nothing")
			}
			vars := map[string]string{"MOMBOT_STORE": url}
			out, errOut, code := runCmd(t, vars, "erase", "1 (415) 555-0177")
			if code != 0 {
				t.Fatalf("erase: exit %d: %s", code, errOut)
			}
			if out != eraseGoneReport {
				t.Errorf("erase printed %q, want %q", out, eraseGoneReport)
			}
			if got := leftovers(t, dir, digits, eraseGoneText); len(got) > 0 {
				t.Errorf("after erase: %s", strings.Join(got, "; "))
			}
			if got := leftovers(t, dir, eraseKeptText); len(got) == 0 {
				t.Errorf("erase took the other person's data too")
			}
			assertErasedKeepsOthers(t, url)

			out, errOut, code = runCmd(t, vars, "erase", eraseGone)
			if code != 0 || out != "erased "+eraseGone+": nothing was stored\n" {
				t.Errorf("erase again: exit %d, %q %s; want nothing erased", code, out, errOut)
			}
		})
	}
}

func TestEraseRedis(t *testing.T) {
	url := testRedisURL(t)
	eraseSeeded(t, url)

	ctx := context.Background()
	s, err := openStore(ctx, url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs := s.(*redis.Store)
	digits := strings.TrimPrefix(eraseGone, "+")
	keys, err := rs.Client().Keys(ctx, rs.Prefix()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("nothing under the test prefix: the other person's data went too")
	}
	for _, k := range keys {
		if strings.Contains(k, digits) {
			t.Errorf("key %q is left after erase", k)
		}
		v, err := rs.Client().Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v, digits) || strings.Contains(v, eraseGoneText) {
			t.Errorf("the value of %q holds the erased number's data", k)
		}
	}
}

// TestErasePostgres: on a PostgreSQL store, erase empties the number's
// inbox too, which delivery/postgres keeps in the store's schema.
func TestErasePostgres(t *testing.T) {
	url := testPostgresURL(t)
	eraseSeeded(t, url)
}

// eraseSeeded seeds the store at url, erases eraseGone with mombot erase,
// and checks what it printed and what it left.
func eraseSeeded(t *testing.T, url string) {
	t.Helper()
	seedErase(t, url)
	out, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": url}, "erase", eraseGone)
	if code != 0 {
		t.Fatalf("erase: exit %d: %s", code, errOut)
	}
	if out != eraseGoneReport {
		t.Errorf("erase printed %q, want %q", out, eraseGoneReport)
	}
	assertErasedKeepsOthers(t, url)
}

// assertErasedKeepsOthers checks through the store's API that the erased
// number has nothing left and the other number everything, with the
// folded day's total unchanged.
func assertErasedKeepsOthers(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	s, err := openStore(ctx, url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, nil)
	for _, kind := range conversation.Kinds {
		recs, err := s.List(ctx, kind, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if strings.Contains(r.Key, eraseGone) {
				t.Errorf("%s record %q is left after erase", kind, r.Key)
			}
		}
	}
	if h, _ := mem.History(ctx, eraseKept); len(h) != 2 {
		t.Errorf("the other person's history has %d messages, want 2", len(h))
	}
	if _, err := mem.Recall(ctx, eraseKept, "wamid."+eraseKeptText); err != nil {
		t.Errorf("the other person's recent message: %v", err)
	}
	days, err := mem.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var anon, kept int64
	for _, d := range days {
		switch d.Phone {
		case conversation.Anonymous:
			anon += d.Messages
		case eraseKept:
			kept += d.Messages
		default:
			t.Errorf("usage of %s is left after erase", d.Phone)
		}
	}
	if anon != 2 || kept != 2 {
		t.Errorf("usage after erase: %d anonymous and %d of the other person, want 2 and 2", anon, kept)
	}
}
