package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// runRecent runs the cases of the recent messages every store remembers
// ([recentMessages]): the ids and texts of a person's recent
// messages both ways, for a week, apart from the conversation.
func runRecent(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env, r recentMessages)
	}{
		{"RecentRememberAndRecall", testRecentRecall},
		{"RecentUnknownAndIsolated", testRecentIsolation},
		{"RecentWindow", testRecentWindow},
		{"RecentOutlivesTheConversation", testRecentOutlives},
		{"RecentPersistsAcrossReopen", testRecentReopen},
		{"RecentSameIDReplaces", testRecentReplace},
		{"RecentTextClipped", testRecentClip},
		{"RecentCapPerPhone", testRecentCap},
		{"RecentInvalidChangesNothing", testRecentInvalid},
		{"RecentSystemSender", testRecentSystem},
		{"RecentClearForgets", testRecentClear},
		{"RecentConcurrent", testRecentConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			defer e.checkInvariants()
			tt.fn(t, e, memRecent{e})
		})
	}
}

// recentMessages is the part of Memory these cases use, as methods that
// take the time, so that a case can remember and recall at other times.
type recentMessages interface {
	RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error
	RecallMessage(ctx context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error)
	ForgetMessages(ctx context.Context, phone string) error
}

// memRecent is recentMessages on the env's Memory, whose clock is set to
// each call's time.
type memRecent struct{ e *env }

func (r memRecent) at(now time.Time) *conversation.Memory {
	if d := now.Sub(r.e.clock.Now()); d != 0 {
		r.e.clock.Advance(d)
	}
	return r.e.mem
}

func (r memRecent) RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	return r.at(now).Remember(ctx, phone, msgs...)
}

func (r memRecent) RecallMessage(ctx context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	return r.at(now).Recall(ctx, phone, id)
}

func (r memRecent) ForgetMessages(ctx context.Context, phone string) error {
	err := r.e.mem.Clear(ctx, phone)
	if errors.Is(err, conversation.ErrNotFound) {
		return nil
	}
	return err
}

const erin, jason = "+14155551234", "+14155555678"

func recent(id, role, text string, at time.Time) conversation.RecentMessage {
	return conversation.RecentMessage{ID: id, Role: role, Text: text, At: at}
}

func (e *env) remember(r recentMessages, phone string, msgs ...conversation.RecentMessage) {
	e.t.Helper()
	if err := r.RememberMessages(ctx(), phone, e.clock.Now(), msgs...); err != nil {
		e.t.Fatalf("RememberMessages(%s): %v", phone, err)
	}
}

// recalled checks that phone's message id is remembered as want.
func (e *env) recalled(r recentMessages, phone string, want conversation.RecentMessage) {
	e.t.Helper()
	got, err := r.RecallMessage(ctx(), phone, want.ID, e.clock.Now())
	if err != nil {
		e.t.Fatalf("RecallMessage(%s, %s): %v", phone, want.ID, err)
	}
	if got.ID != want.ID || got.Role != want.Role || got.Text != want.Text || !got.At.Equal(want.At) {
		e.t.Errorf("RecallMessage(%s, %s) = %+v, want %+v", phone, want.ID, got, want)
	}
}

// forgotten checks that phone's message id is not remembered.
func (e *env) forgotten(r recentMessages, phone, id string) {
	e.t.Helper()
	got, err := r.RecallMessage(ctx(), phone, id, e.clock.Now())
	if !errors.Is(err, conversation.ErrNotFound) {
		e.t.Errorf("RecallMessage(%s, %s) = %+v, %v; want an error wrapping ErrNotFound", phone, id, got, err)
	}
}

// Both ways: the person's message and the assistant's reply, with their
// times to the microsecond and text of every kind kept exactly.
func testRecentRecall(t *testing.T, e *env, r recentMessages) {
	now := e.clock.Now()
	in := recent("wamid.HBgLMTQxNTU1NTEyMzQVAgASGBQzQUI=", conversation.RoleUser, "find me a chicken dinner", now)
	out := recent("wamid.HBgLMTQxNTU1NTEyMzQVAgARGBI5QTND", conversation.RoleAssistant, "1. Lemon chicken\n2. Chicken tacos 🌮 \"quoted\" <b>&</b>", now.Add(time.Second))
	e.remember(r, erin, in, out)
	e.recalled(r, erin, in)
	e.recalled(r, erin, out)
}

// An id never remembered, and another person's id, are not found: one
// person's messages are never quoted to another.
func testRecentIsolation(t *testing.T, e *env, r recentMessages) {
	m := recent("wamid.erin1", conversation.RoleUser, "Erin's", e.clock.Now())
	e.remember(r, erin, m)
	e.forgotten(r, erin, "wamid.unknown")
	e.forgotten(r, jason, m.ID)
	e.forgotten(r, "+14155550000", m.ID)
}

// A message is remembered for RecentWindow after it was sent, not a moment
// longer; one already past the window is not recorded at all.
func testRecentWindow(t *testing.T, e *env, r recentMessages) {
	m := recent("wamid.week", conversation.RoleAssistant, "the list", e.clock.Now())
	e.remember(r, erin, m)
	e.clock.Advance(conversation.RecentWindow)
	e.recalled(r, erin, m)
	e.clock.Advance(time.Second)
	e.forgotten(r, erin, m.ID)

	old := recent("wamid.old", conversation.RoleUser, "old", e.clock.Now().Add(-conversation.RecentWindow-time.Minute))
	e.remember(r, erin, old)
	e.forgotten(r, erin, old.ID)
	e.reopen(nil)
	r = memRecent{e}
	e.forgotten(r, erin, m.ID)
	e.forgotten(r, erin, old.ID)
}

// The conversation's expiry, its turn cap and a store's Expire leave the
// recent messages: quoting is how a person points back after the 30-minute
// memory has gone.
func testRecentOutlives(t *testing.T, e *env, r recentMessages) {
	m := recent("wamid.reply", conversation.RoleAssistant, "Here are 3 recipes", e.clock.Now())
	e.remember(r, erin, m)
	e.save(erin, TextTurn("[From Erin]: recipes?", "Here are 3 recipes")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Minute)
	if h := e.history(erin); len(h) != 0 {
		t.Fatalf("history after expiry: %d messages", len(h))
	}
	if _, err := e.mem.Sweep(ctx()); err != nil {
		t.Fatal(err)
	}
	e.recalled(r, erin, m)
}

func testRecentReopen(t *testing.T, e *env, r recentMessages) {
	m := recent("wamid.persist", conversation.RoleUser, "remember me", e.clock.Now())
	e.remember(r, erin, m)
	e.reopen(nil)
	e.recalled(memRecent{e}, erin, m)
}

// Remembering an id again replaces what was remembered (an edited
// message, or a redelivery), and one call may name an id twice: the last
// wins.
func testRecentReplace(t *testing.T, e *env, r recentMessages) {
	now := e.clock.Now()
	e.remember(r, erin, recent("wamid.same", conversation.RoleUser, "first", now))
	e.remember(r, erin, recent("wamid.same", conversation.RoleUser, "second", now), recent("wamid.same", conversation.RoleUser, "third", now))
	e.recalled(r, erin, recent("wamid.same", conversation.RoleUser, "third", now))
}

func testRecentClip(t *testing.T, e *env, r recentMessages) {
	long := strings.Repeat("é", conversation.MaxRecentText) // 2 bytes each
	m := recent("wamid.long", conversation.RoleAssistant, long, e.clock.Now())
	e.remember(r, erin, m)
	got, err := r.RecallMessage(ctx(), erin, m.ID, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Text) > conversation.MaxRecentText || !strings.HasSuffix(got.Text, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got.Text, "…")) {
		t.Errorf("a long text is remembered as %d bytes ending %q, want at most %d, cut at a character and ending with …", len(got.Text), got.Text[max(0, len(got.Text)-8):], conversation.MaxRecentText)
	}
}

// Beyond MaxRecentPerPhone the oldest are forgotten; another person's are
// not touched.
func testRecentCap(t *testing.T, e *env, r recentMessages) {
	e.remember(r, jason, recent("wamid.jason", conversation.RoleUser, "Jason's", e.clock.Now()))
	msgs := make([]conversation.RecentMessage, conversation.MaxRecentPerPhone+5)
	for i := range msgs {
		msgs[i] = recent(fmt.Sprintf("wamid.%04d", i), conversation.RoleUser, fmt.Sprint("message ", i), e.clock.Now().Add(time.Duration(i)*time.Millisecond))
	}
	e.remember(r, erin, msgs[:100]...)
	e.remember(r, erin, msgs[100:]...)
	for i := range 5 {
		e.forgotten(r, erin, msgs[i].ID)
	}
	e.recalled(r, erin, msgs[5])
	e.recalled(r, erin, msgs[len(msgs)-1])
	e.recalled(r, jason, recent("wamid.jason", conversation.RoleUser, "Jason's", e.clock.Now()))
}

// A bad phone or a bad message is refused with its sentinel, and nothing of
// the call is recorded.
func testRecentInvalid(t *testing.T, e *env, r recentMessages) {
	now := e.clock.Now()
	good := recent("wamid.good", conversation.RoleUser, "fine", now)
	tests := []struct {
		name  string
		phone string
		bad   conversation.RecentMessage
		want  error
	}{
		{"empty phone", "", good, conversation.ErrInvalidPhone},
		{"no id", erin, recent("", conversation.RoleUser, "x", now), conversation.ErrInvalidRecent},
		{"an id with a newline", erin, recent("wamid.\n", conversation.RoleUser, "x", now), conversation.ErrInvalidRecent},
		{"an id too long", erin, recent(strings.Repeat("w", conversation.MaxRecentID+1), conversation.RoleUser, "x", now), conversation.ErrInvalidRecent},
		{"a tool's role", erin, recent("wamid.x", "tool", "x", now), conversation.ErrInvalidRecent},
		{"no time", erin, recent("wamid.x", conversation.RoleUser, "x", time.Time{}), conversation.ErrInvalidRecent},
	}
	for _, tt := range tests {
		err := r.RememberMessages(ctx(), tt.phone, now, good, tt.bad)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: RememberMessages: %v, want %v", tt.name, err, tt.want)
		}
	}
	e.forgotten(r, erin, good.ID)
}

func testRecentSystem(t *testing.T, e *env, r recentMessages) {
	m := recent("wamid.sys", conversation.RoleUser, "automated", e.clock.Now())
	e.remember(r, conversation.SystemSender, m)
	e.forgotten(r, conversation.SystemSender, m.ID)
}

// history clear (Memory.Clear) forgets a person's recent messages, with or
// without a stored conversation, and only theirs.
func testRecentClear(t *testing.T, e *env, r recentMessages) {
	now := e.clock.Now()
	e.remember(r, erin, recent("wamid.e1", conversation.RoleUser, "a", now))
	e.remember(r, jason, recent("wamid.j1", conversation.RoleUser, "b", now))
	e.save(erin, TextTurn("[From Erin]: hi", "hello")...)
	if err := e.mem.Clear(ctx(), erin); err != nil {
		t.Fatal(err)
	}
	e.forgotten(r, erin, "wamid.e1")
	e.recalled(r, jason, recent("wamid.j1", conversation.RoleUser, "b", now))

	// No conversation stored: Clear says so, and forgets all the same.
	e.remember(r, erin, recent("wamid.e2", conversation.RoleUser, "c", now))
	if err := e.mem.Clear(ctx(), erin); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Clear without a conversation: %v, want ErrNotFound", err)
	}
	e.forgotten(r, erin, "wamid.e2")
	e.reopen(nil)
	e.forgotten(memRecent{e}, erin, "wamid.e2")
	if err := e.mem.Clear(ctx(), "+14155550000"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Clear of a phone with nothing stored: %v, want ErrNotFound", err)
	}
}

// Additions from many goroutines for one phone are all kept.
func testRecentConcurrent(t *testing.T, e *env, r recentMessages) {
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m := recent(fmt.Sprintf("wamid.%d.%d", w, i), conversation.RoleAssistant, "part", e.clock.Now())
				if err := r.RememberMessages(ctx(), erin, e.clock.Now(), m); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range workers {
		for i := range each {
			e.forgottenNot(r, erin, fmt.Sprintf("wamid.%d.%d", w, i))
		}
	}
}

// forgottenNot checks that phone's message id is remembered.
func (e *env) forgottenNot(r recentMessages, phone, id string) {
	e.t.Helper()
	if _, err := r.RecallMessage(ctx(), phone, id, e.clock.Now()); err != nil {
		e.t.Errorf("RecallMessage(%s, %s): %v", phone, id, err)
	}
}
