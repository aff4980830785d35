package conversation_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/conversation"
)

func TestClipRecentText(t *testing.T) {
	for _, s := range []string{
		"", "short", strings.Repeat("a", conversation.MaxRecentText),
		strings.Repeat("a", conversation.MaxRecentText+1), strings.Repeat("é", conversation.MaxRecentText),
		strings.Repeat("🌮", conversation.MaxRecentText), "bad \xff utf-8",
	} {
		got := conversation.ClipRecentText(s)
		switch {
		case len(got) > conversation.MaxRecentText:
			t.Errorf("%d bytes clipped to %d, over %d", len(s), len(got), conversation.MaxRecentText)
		case !utf8.ValidString(got):
			t.Errorf("%q clipped to invalid UTF-8", s)
		case len(s) <= conversation.MaxRecentText && utf8.ValidString(s) && got != s:
			t.Errorf("%q changed to %q", s, got)
		case len(s) > conversation.MaxRecentText && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…"))):
			t.Errorf("%d bytes clipped to %q...: not a prefix ending with …", len(s), got[:20])
		}
	}
}

func TestCheckRemember(t *testing.T) {
	now := time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC)
	msg := func(id string, at time.Time) conversation.RecentMessage {
		return conversation.RecentMessage{ID: id, Role: conversation.RoleUser, Text: id, At: at}
	}
	out, skip, err := conversation.CheckRemember("+14155551234", now, []conversation.RecentMessage{
		msg("b", now), msg("a", now.Add(-time.Hour)), msg("old", now.Add(-conversation.RecentWindow-time.Second)),
		{ID: "b", Role: conversation.RoleAssistant, Text: "b again", At: now},
	})
	if err != nil || skip {
		t.Fatalf("CheckRemember: skip %v, %v", skip, err)
	}
	if len(out) != 2 || out[0].ID != "a" || out[1].ID != "b" || out[1].Text != "b again" {
		t.Errorf("CheckRemember = %+v; want a, then the last b, and not the message past the window", out)
	}
	if _, skip, err := conversation.CheckRemember(conversation.SystemSender, now, []conversation.RecentMessage{msg("s", now)}); !skip || err != nil {
		t.Errorf("the system sender: skip %v, %v", skip, err)
	}
	if _, _, err := conversation.CheckRemember("+14155551234", now, []conversation.RecentMessage{{ID: "x", Role: "user"}}); !errors.Is(err, conversation.ErrInvalidRecent) {
		t.Errorf("no time: %v", err)
	}
	kept := conversation.PruneRecent(append(make([]conversation.RecentMessage, 0), msg("new", now), msg("gone", now.Add(-conversation.RecentWindow-time.Minute))), now)
	if len(kept) != 1 || kept[0].ID != "new" {
		t.Errorf("PruneRecent = %+v", kept)
	}
}
