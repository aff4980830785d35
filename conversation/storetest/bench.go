package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// BenchRecent measures what remembering a message ([conversation.Memory.Remember])
// costs next to saving a turn, on the same store and in the same run: a
// family of 5 people, each with a full conversation (10 turns) and a full
// week of recent messages (500, of 200 bytes each). Each iteration saves a
// turn and remembers the two messages of that exchange (the person's and the
// reply) for one person, then recalls one. It reports each operation's mean
// and the ratio remember/save, which is what the recent messages add to a
// message's storage work.
func BenchRecent(b *testing.B, open Opener) {
	s, err := open()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	clock := NewClock(Start)
	mem, err := conversation.New(s, &conversation.Options{Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	phones := []string{"+14155551201", "+14155551202", "+14155551203", "+14155551204", "+14155551205"}
	text := strings.Repeat("a grocery list item, ", 10) // about 200 bytes
	for _, p := range phones {
		for i := range conversation.DefaultMaxTurns {
			if err := mem.SaveTurn(ctx, p, TextTurn(fmt.Sprint("[From X]: ", i, text), text)); err != nil {
				b.Fatal(err)
			}
		}
		msgs := make([]conversation.RecentMessage, conversation.MaxRecentPerPhone)
		for i := range msgs {
			msgs[i] = conversation.RecentMessage{ID: fmt.Sprintf("wamid.bench.%s.%d", p, i), Role: conversation.RoleUser, Text: text, At: clock.Now().Add(time.Duration(i) * time.Millisecond)}
		}
		if err := mem.Remember(ctx, p, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	var save, remember, recall time.Duration
	n := 0
	for b.Loop() {
		clock.Advance(time.Second)
		p := phones[n%len(phones)]
		t0 := time.Now()
		if err := mem.SaveTurn(ctx, p, TextTurn("[From X]: "+text, text)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		in := conversation.RecentMessage{ID: fmt.Sprintf("wamid.in.%d", n), Role: conversation.RoleUser, Text: text, At: clock.Now()}
		out := conversation.RecentMessage{ID: fmt.Sprintf("wamid.out.%d", n), Role: conversation.RoleAssistant, Text: text, At: clock.Now()}
		if err := mem.Remember(ctx, p, in); err != nil {
			b.Fatal(err)
		}
		if err := mem.Remember(ctx, p, out); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := mem.Recall(ctx, p, out.ID); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		save, remember, recall = save+t1.Sub(t0), remember+t2.Sub(t1), recall+t3.Sub(t2)
		n++
	}
	if n == 0 || save == 0 {
		return
	}
	b.ReportMetric(float64(save.Microseconds())/float64(n), "save-µs/op")
	b.ReportMetric(float64(remember.Microseconds())/float64(n), "remember2-µs/op")
	b.ReportMetric(float64(recall.Microseconds())/float64(n), "recall-µs/op")
	b.ReportMetric(float64(remember)/float64(save), "remember2/save")
}
