package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// TestServeSweepsEveryStore: serve sweeps whatever its store: at start it
// deletes an expired conversation and recent messages past the week of
// someone who never writes again, and folds usage older than the
// retention into the day's anonymous total, leaving what is recent.
func TestServeSweepsEveryStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs mombot serve")
	}
	const gone, kept = "+14155550131", "+14155550132"
	for name, newStore := range testStores {
		t.Run(name, func(t *testing.T) {
			url := newStore(t)
			ctx := context.Background()
			now := time.Now()
			long := now.Add(-8 * 24 * time.Hour)
			s, err := openStore(ctx, url, quietEnv())
			if err != nil {
				t.Fatal(err)
			}
			past, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return long }})
			if err := past.SaveTurn(ctx, gone, storetest.TextTurn("[From Erin]: hi", "hello")); err != nil {
				t.Fatal(err)
			}
			if err := past.Remember(ctx, gone, conversation.RecentMessage{ID: "wamid.old", Role: conversation.RoleUser, Text: "hi", At: long}); err != nil {
				t.Fatal(err)
			}
			mem, _ := conversation.New(s, nil)
			if err := mem.Remember(ctx, kept, conversation.RecentMessage{ID: "wamid.new", Role: conversation.RoleUser, Text: "hi", At: now}); err != nil {
				t.Fatal(err)
			}
			old := now.Add(-400 * 24 * time.Hour)
			for _, at := range []time.Time{old, now} {
				if err := mem.AddUsage(ctx, gone, at, conversation.Usage{Messages: 1}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()

			f := newServeFixture(t, url, map[string]string{kept: "Erin"})
			p := f.start()
			waitLog(t, p, `msg="conversation: swept expired conversations" deleted=1`)
			p.stop()

			s, err = openStore(ctx, url, quietEnv())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Get(ctx, conversation.Conversations, gone); err == nil {
				t.Errorf("the expired conversation is still stored after serve's sweep")
			}
			if _, err := s.Get(ctx, conversation.Recent, gone); err == nil {
				t.Errorf("recent messages past the week are still stored after serve's sweep")
			}
			if _, err := s.Get(ctx, conversation.Recent, kept); err != nil {
				t.Errorf("this week's recent messages: %v", err)
			}
			recs, err := s.List(ctx, conversation.UsageDays, "")
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range recs {
				keys = append(keys, r.Key)
			}
			want := []string{conversation.UsageDay(old).Format(time.DateOnly) + "/*", conversation.UsageDay(now).Format(time.DateOnly) + "/" + gone}
			if strings.Join(keys, " ") != strings.Join(want, " ") {
				t.Errorf("the ledger after serve's sweep holds %q, want %q", keys, want)
			}
		})
	}
}

// waitLog waits until p's log holds s.
func waitLog(t *testing.T, p *servedProc, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log of mombot serve within 30s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
