// Package storetest is the conformance suite of conversation stores, in the
// manner of testing/slogtest: every [conversation.Store] runs [Run] and so
// shows that, behind a [conversation.Memory], it keeps the original design's
// contract: lifecycle, expiry, the turn cap, isolation between phones, the
// system sender, image placeholders, byte stability, validity, persistence
// across reopening and concurrent use; that it keeps the usage ledger
// ([conversation.UsageLedger]) next to the conversations; that it
// remembers recent messages by id ([conversation.RecentMessages]); that it
// keeps the family's notes ([conversation.Notes]): ids and limits under
// concurrent writers, privacy, and forgetting that leaves no text behind;
// the running summaries ([conversation.Summaries]): no turn that leaves a
// conversation is lost before it is folded, none is folded twice, and a
// forgotten note's text leaves them too; and the family's lists
// ([conversation.FamilyLists]), changes from two stores on the same
// storage never losing each other.
package storetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Opener opens the store under test. Every call opens the same storage, as a
// server restart would, so that what one store saved the next one loads.
type Opener func() (conversation.Store, error)

// NewStorage returns an Opener on fresh, empty storage that the test owns;
// it cleans up with t.Cleanup.
type NewStorage func(t *testing.T) Opener

// Start is the fake clock's start in every test: a time with microseconds,
// the precision stores must keep.
var Start = time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.Local)

// Run runs the conformance suite against the storage newStorage makes.
func Run(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Empty", testEmpty},
		{"SaveAndHistory", testSaveAndHistory},
		{"TurnsInOrder", testTurnsInOrder},
		{"Expiry", testExpiry},
		{"ExpiryIsPersisted", testExpiryPersisted},
		{"SaveAfterExpiryStartsAnew", testSaveAfterExpiry},
		{"ExpireKeepsNewerTurn", testExpireKeepsNewer},
		{"CapDropsWholeTurns", testCap},
		{"Isolation", testIsolation},
		{"SystemSender", testSystemSender},
		{"Placeholders", testPlaceholders},
		{"ByteStability", testByteStability},
		{"InvalidTurnsRejected", testInvalidTurns},
		{"ToolIDsUnique", testToolIDsUnique},
		{"InvalidPhone", testInvalidPhone},
		{"PersistenceAcrossReopen", testReopen},
		{"TurnExtraKept", testTurnExtra},
		{"ExtraCompactedAndChecked", testExtraCompacted},
		{"Clear", testClear},
		{"List", testList},
		{"Concurrent", testConcurrent},
	}
	runRecords(t, newStorage) // records.go
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			tt.fn(t, e)
			e.checkInvariants()
		})
	}
	runUsage(t, newStorage)     // usage.go
	runRecent(t, newStorage)    // recent.go
	runNotes(t, newStorage)     // notes.go
	runSummaries(t, newStorage) // summaries.go
	runLists(t, newStorage)     // lists.go
}

// env is one test's store, memory and clock.
type env struct {
	t        *testing.T
	open     Opener
	clock    *Clock
	store    conversation.Store
	mem      *conversation.Memory
	opts     conversation.Options
	maxTurns int // the largest turn cap the case used
}

// newEnv opens fresh storage for a case, with a Memory on the fake clock.
func newEnv(t *testing.T, newStorage NewStorage) *env {
	e := &env{t: t, open: newStorage(t), clock: NewClock(Start)}
	e.reopen(nil)
	return e
}

// reopen closes the current store, if any, and opens the storage again with
// opts (nil keeps the previous options).
func (e *env) reopen(opts *conversation.Options) {
	e.t.Helper()
	if e.store != nil {
		if err := e.store.Close(); err != nil {
			e.t.Fatalf("Close: %v", err)
		}
	}
	if opts != nil {
		e.opts = *opts
	}
	e.opts.Now = e.clock.Now
	e.maxTurns = max(e.maxTurns, cmp.Or(e.opts.MaxTurns, conversation.DefaultMaxTurns))
	s, err := e.open()
	if err != nil {
		e.t.Fatalf("open store: %v", err)
	}
	e.store = s
	e.t.Cleanup(func() {
		if e.store == s {
			s.Close()
			e.store = nil
		}
	})
	if e.mem, err = conversation.New(s, &e.opts); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) history(phone string) []conversation.Message {
	e.t.Helper()
	h, err := e.mem.History(context.Background(), phone)
	if err != nil {
		e.t.Fatalf("History(%q): %v", phone, err)
	}
	if h == nil {
		e.t.Fatalf("History(%q) = nil, want an empty, non-nil slice", phone)
	}
	return h
}

func (e *env) save(phone string, msgs ...conversation.Message) {
	e.t.Helper()
	if err := e.mem.SaveTurn(context.Background(), phone, msgs); err != nil {
		e.t.Fatalf("SaveTurn(%q): %v", phone, err)
	}
}

func ctx() context.Context { return context.Background() }

func msg(role, content string) conversation.Message {
	return conversation.Message{Role: role, Content: json.RawMessage(content)}
}

// TextTurn returns a turn of a user text and an assistant text reply.
func TextTurn(user, reply string) []conversation.Message {
	return []conversation.Message{
		conversation.UserText(user),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock(reply)),
	}
}

// ToolTurn returns a turn with one tool round: user text, an assistant
// tool_use with id, its tool_result and a final text.
func ToolTurn(user, id, result, reply string) []conversation.Message {
	return []conversation.Message{
		conversation.UserText(user),
		msg("assistant", fmt.Sprintf(`[{"type":"text","text":"Let me look."},{"type":"tool_use","id":%q,"name":"search","input":{"query":%q}}]`, id, user)),
		msg("user", fmt.Sprintf(`[{"type":"tool_result","tool_use_id":%q,"content":%q}]`, id, result)),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock(reply)),
	}
}

// assertMessages fails unless got and want are the same messages, byte for byte.
func assertMessages(t *testing.T, got, want []conversation.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\ngot  %s\nwant %s", len(got), len(want), dump(got), dump(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("message %d:\ngot  %s %s %s\nwant %s %s %s", i, got[i].Role, got[i].Content, fmtExtra(got[i].Extra), want[i].Role, want[i].Content, fmtExtra(want[i].Extra))
		}
	}
}

func dump(msgs []conversation.Message) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

func concat(turns ...[]conversation.Message) []conversation.Message {
	return slices.Concat(turns...)
}

func testEmpty(t *testing.T, e *env) {
	if h := e.history("+14155551234"); len(h) != 0 {
		t.Fatalf("History of a new phone = %s, want []", dump(h))
	}
	if _, err := e.mem.Load(ctx(), "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load of a new phone: err = %v, want ErrNotFound", err)
	}
	if err := e.mem.Clear(ctx(), "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Clear of a new phone: err = %v, want ErrNotFound", err)
	}
	sums, err := e.mem.List(ctx())
	if err != nil || len(sums) != 0 {
		t.Fatalf("List of an empty store = %v, %v; want none", sums, err)
	}
}

func testSaveAndHistory(t *testing.T, e *env) {
	turn := ToolTurn("find me a chicken dinner recipe", "toolu_01A", "Found 5 recipes: 1. Lemon chicken 2. Chicken tacos", "Here are 5 recipes:\n1. Lemon chicken\n2. Chicken tacos")
	e.save("+14155551234", turn...)
	assertMessages(t, e.history("+14155551234"), turn)
	if h := e.history("+14155551234"); !h[0].Equal(turn[0]) {
		t.Fatal("a second History differs from the first")
	}
}

func testTurnsInOrder(t *testing.T, e *env) {
	var want []conversation.Message
	for i := range 4 {
		var turn []conversation.Message
		if i%2 == 0 {
			turn = TextTurn(fmt.Sprintf("message %d", i), fmt.Sprintf("reply %d", i))
		} else {
			turn = ToolTurn(fmt.Sprintf("message %d", i), fmt.Sprintf("toolu_%d", i), "result", fmt.Sprintf("reply %d", i))
		}
		e.clock.Advance(time.Minute)
		e.save("+14155551234", turn...)
		want = append(want, turn...)
	}
	assertMessages(t, e.history("+14155551234"), want)
}

func testExpiry(t *testing.T, e *env) {
	turn := TextTurn("what's for dinner?", "Tacos.")
	e.save("+14155551234", turn...)
	e.clock.Advance(conversation.DefaultTimeout)
	assertMessages(t, e.history("+14155551234"), turn) // exactly 30 minutes: not "more than"
	e.clock.Advance(time.Millisecond)
	if h := e.history("+14155551234"); len(h) != 0 {
		t.Fatalf("History after the timeout = %s, want []", dump(h))
	}
	if _, err := e.mem.Load(ctx(), "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("an expired conversation was not deleted on access: Load err = %v", err)
	}

	// A configured timeout is honoured.
	e.reopen(&conversation.Options{Timeout: 5 * time.Minute})
	e.save("+14155551234", turn...)
	e.clock.Advance(5*time.Minute + time.Second)
	if h := e.history("+14155551234"); len(h) != 0 {
		t.Fatalf("History after a 5 minute timeout = %s, want []", dump(h))
	}
}

func testExpiryPersisted(t *testing.T, e *env) {
	e.save("+14155551234", TextTurn("hello", "hi")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history("+14155551234")
	e.reopen(nil)
	if _, err := e.mem.Load(ctx(), "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("after reopening, the expired conversation is back: Load err = %v", err)
	}
}

func testSaveAfterExpiry(t *testing.T, e *env) {
	e.save("+14155551234", TextTurn("old topic", "old answer")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Minute)
	fresh := TextTurn("new topic", "new answer")
	e.save("+14155551234", fresh...) // no History in between
	assertMessages(t, e.history("+14155551234"), fresh)
	c, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Turns) != 1 || !c.LastActive.Equal(e.clock.Now()) {
		t.Fatalf("after saving into an expired conversation: %d turns, last active %v; want 1 turn at %v", len(c.Turns), c.LastActive, e.clock.Now())
	}
}

func testExpireKeepsNewer(t *testing.T, e *env) {
	e.save("+14155551234", TextTurn("one", "1")...)
	old, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	e.save("+14155551234", TextTurn("two", "2")...)
	// A reader that saw the old state decides to expire it; the newer
	// turn wins: the delete is conditioned on the version it read.
	err = e.store.Delete(ctx(), conversation.Conversations, "+14155551234", old.Version)
	if !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Delete with the version before a save = %v, want ErrConflict", err)
	}
	if h := e.history("+14155551234"); len(h) != 4 {
		t.Fatalf("a delete with a stale version removed a newer turn: %d messages left, want 4", len(h))
	}
}

func testCap(t *testing.T, e *env) {
	e.reopen(&conversation.Options{MaxTurns: 3})
	var turns [][]conversation.Message
	for i := range 5 {
		turn := TextTurn(fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i))
		if i%2 == 1 { // turns of different lengths: the cap counts turns, not messages
			turn = ToolTurn(fmt.Sprintf("q%d", i), fmt.Sprintf("toolu_%d", i), "r", fmt.Sprintf("a%d", i))
		}
		turns = append(turns, turn)
		e.save("+14155551234", turn...)
	}
	got := e.history("+14155551234")
	assertMessages(t, got, concat(turns[2:]...))
	if got[0].Role != "user" {
		t.Fatal("the capped history does not start with a user message")
	}
	c, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil || len(c.Turns) != 3 {
		t.Fatalf("store holds %d turns (err %v), want 3", len(c.Turns), err)
	}

	// The default cap is 10.
	e.reopen(&conversation.Options{})
	for i := range 12 {
		e.save("+14150000000", TextTurn(fmt.Sprintf("q%d", i), "a")...)
	}
	if h := e.history("+14150000000"); len(h) != 20 || h[0].Text() != "q2" {
		t.Fatalf("default cap: %d messages starting %q, want 20 starting \"q2\"", len(h), h[0].Text())
	}

	// Lowering the cap trims what History returns at once.
	e.reopen(&conversation.Options{MaxTurns: 2})
	if h := e.history("+14150000000"); len(h) != 4 || h[0].Text() != "q10" {
		t.Fatalf("lowered cap: %d messages starting %q, want 4 starting \"q10\"", len(h), h[0].Text())
	}
}

func testIsolation(t *testing.T, e *env) {
	a, b := TextTurn("I am Erin", "Hi Erin"), TextTurn("I am Jason", "Hi Jason")
	e.save("+14155551234", a...)
	e.save("+14155555678", b...)
	assertMessages(t, e.history("+14155551234"), a)
	assertMessages(t, e.history("+14155555678"), b)
	if err := e.mem.Clear(ctx(), "+14155551234"); err != nil {
		t.Fatal(err)
	}
	assertMessages(t, e.history("+14155555678"), b)
	// Phones that are prefixes of each other are different people.
	e.save("+1415555567", a...)
	assertMessages(t, e.history("+14155555678"), b)
	assertMessages(t, e.history("+1415555567"), a)
}

func testSystemSender(t *testing.T, e *env) {
	if err := e.mem.SaveTurn(ctx(), conversation.SystemSender, TextTurn("daily digest", "Here is your digest")); err != nil {
		t.Fatalf("SaveTurn(system) = %v, want nil (a no-op)", err)
	}
	if h := e.history(conversation.SystemSender); len(h) != 0 {
		t.Fatalf("History(system) = %s, want []", dump(h))
	}
	if _, err := e.mem.Load(ctx(), conversation.SystemSender); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("a system turn reached the store: Load err = %v", err)
	}
	sums, _ := e.mem.List(ctx())
	if len(sums) != 0 {
		t.Fatalf("List after a system turn = %v, want none", sums)
	}
}

func testPlaceholders(t *testing.T, e *env) {
	const b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	in := []conversation.Message{
		msg("user", `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+b64+`"}},{"type":"text","text":"[From Erin]: what is this?"}]`),
		msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"fetch","input":{}}]`),
		msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a chart"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+b64+`"}}],"is_error":false}]`),
		msg("assistant", `[{"type":"text","text":"A recipe card."}]`),
		msg("user", `[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},{"type":"text","text":"and these?"}]`),
		msg("assistant", `[{"type":"text","text":"A menu and a photo."}]`),
	}
	want := []conversation.Message{
		msg("user", `[{"type":"text","text":"[Image sent: photo]"},{"type":"text","text":"[From Erin]: what is this?"}]`),
		in[1],
		msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a chart"},{"type":"text","text":"[Image sent: photo]"}],"is_error":false}]`),
		in[3],
		msg("user", `[{"type":"text","text":"[Document sent: application/pdf]"},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},{"type":"text","text":"and these?"}]`),
		in[5],
	}
	e.save("+14155551234", in...)
	assertMessages(t, e.history("+14155551234"), want)
	e.reopen(nil)
	assertMessages(t, e.history("+14155551234"), want)
}

// unusual is content a store must keep byte for byte: block types and fields
// the memory does not know, escapes, HTML characters and non-ASCII text.
var unusual = []conversation.Message{
	msg("user", `"[From Erin]: caf\u00e9 <b>&</b> \"quotes\" \ud83c\udf2e and 🌮"`),
	msg("assistant", `[{"type":"thinking","thinking":"She wants tacos.","signature":"EqQBCkYIBxgCKkB/sig+=="},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"taco recipe"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"Tacos","encrypted_content":"abc","page_age":null}]},{"type":"text","text":"Tacos it is.","citations":[{"type":"web_search_result_location","url":"https://example.com","title":"Tacos","encrypted_index":"xyz","cited_text":"tacos"}]},{"type":"tool_use","id":"toolu_9","name":"add_items","input":{"list":"grocery","items":["tortillas","lime"],"nested":{"z":1,"a":[1.50,2e3]}},"caller":{"type":"direct"}}]`),
	msg("user", `[{"type":"tool_result","tool_use_id":"toolu_9","content":"Added 2 items.","cache_control":{"type":"ephemeral"}},{"type":"future_block","x":[true,false,null]}]`),
	msg("assistant", `[{"type":"tool_use","id":"toolu_10","name":"search_notes","input":{}}]`),
	// A search_result's "source" is a string URL, unlike an image's.
	msg("user", `[{"type":"tool_result","tool_use_id":"toolu_10","content":[{"type":"search_result","source":"https://example.com/notes/1","title":"Note 1","content":[{"type":"text","text":"Tacos on Tuesday."}],"citations":{"enabled":true}}]},{"type":"search_result","source":"https://example.com/notes/2","title":"Note 2","content":[{"type":"text","text":"Lime."}]},{"type":"document","source":{"type":"content","content":[{"type":"text","text":"inline"}]}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain"}}]`),
	msg("assistant", `[{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"Done."}]`),
}

func testByteStability(t *testing.T, e *env) {
	e.save("+14155551234", unusual...)
	first := e.history("+14155551234")
	assertMessages(t, first, unusual)

	spaced := []conversation.Message{
		msg("user", "\"spaced out\""),
		msg("assistant", "[ {\"type\" : \"text\",\n  \"text\" : \"a  b\"} ]"),
	}
	e.save("+14155551234", spaced...)
	second := e.history("+14155551234")
	// What was read before is a byte-identical prefix of what is read now,
	// so the prompt cache can serve it.
	assertMessages(t, second[:len(first)], first)
	if got := string(second[len(first)+1].Content); got != `[{"type":"text","text":"a  b"}]` {
		t.Fatalf("content not compacted as JSON: %s", got)
	}
	e.reopen(nil)
	assertMessages(t, e.history("+14155551234"), second)
	for i := range 3 {
		e.reopen(nil)
		e.save("+14155551234", TextTurn(fmt.Sprint("again ", i), "ok")...)
		assertMessages(t, e.history("+14155551234")[:len(second)], second)
	}
}

func testInvalidTurns(t *testing.T, e *env) {
	good := TextTurn("hello", "hi")
	e.save("+14155551234", good...)
	before, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]conversation.Message{
		"empty turn":         {},
		"starts with reply":  {msg("assistant", `"hi"`)},
		"bad role":           {msg("system", `"hi"`)},
		"empty string":       {msg("user", `""`)},
		"blank text":         {msg("user", `[{"type":"text","text":"  \n"}]`)},
		"empty content":      {msg("user", `[]`)},
		"null content":       {msg("user", `null`)},
		"not JSON":           {msg("user", `{"type":`)},
		"block without type": {msg("user", `[{"text":"hi"}]`)},
		"orphan tool_result": {msg("user", `[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]`)},
		"unanswered tool_use": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			msg("assistant", `"done"`),
		},
		"ends on tool_use": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
		},
		"wrong id": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_2","content":"r"}]`),
		},
		"one of two answered": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}},{"type":"tool_use","id":"toolu_2","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`),
		},
		"text before tool_result": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			msg("user", `[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`),
		},
		"empty text in a tool_result": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":""}]}]`),
		},
		"tool_use input not an object": {
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":"query"}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`),
		},
		"invalid UTF-8": {{Role: "user", Content: json.RawMessage("\"\xff\xfe\"")}},
	}
	for name, turn := range bad {
		err := e.mem.SaveTurn(ctx(), "+14155551234", turn)
		if !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Errorf("%s: SaveTurn err = %v, want ErrInvalidTurn", name, err)
		}
	}
	after, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if !after.LastActive.Equal(before.LastActive) || len(after.Turns) != len(before.Turns) {
		t.Fatalf("rejected turns changed the store: %d turns at %v, was %d at %v", len(after.Turns), after.LastActive, len(before.Turns), before.LastActive)
	}
	assertMessages(t, e.history("+14155551234"), good)

	// A partial turn that ends on tool results is valid: the next message
	// may follow it.
	partial := ToolTurn("look it up", "toolu_p", "found", "unused")[:3]
	e.save("+14155551234", partial...)
	e.save("+14155551234", TextTurn("and?", "and that's it")...)
	if err := conversation.ValidateTurn(e.history("+14155551234")); err != nil {
		t.Fatalf("the history after a partial turn is not valid: %v", err)
	}
}

// testToolIDsUnique: a turn that reuses a tool_use id of a turn that stays
// next to it is refused and changes nothing, also when two such turns are
// saved at once; an id of a turn that the cap drops, or of an expired
// conversation, may come back.
func testToolIDsUnique(t *testing.T, e *env) {
	e.reopen(&conversation.Options{MaxTurns: 3})
	first := ToolTurn("look up a", "toolu_a", "found a", "a")
	e.save("+14155551234", first...)
	e.save("+14155551234", TextTurn("thanks", "welcome")...)
	err := e.mem.SaveTurn(ctx(), "+14155551234", ToolTurn("again", "toolu_a", "found a", "a"))
	if !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a reused tool_use id: SaveTurn err = %v, want ErrInvalidTurn", err)
	}
	if h := e.history("+14155551234"); len(h) != 6 {
		t.Fatalf("a refused turn changed the history: %d messages, want 6", len(h))
	}
	// Another phone may use the same id.
	e.save("+14155555678", ToolTurn("look up a", "toolu_a", "found a", "a")...)
	// With a cap of 3, the turn holding toolu_a drops out as the next turn
	// is saved, so its id may come back.
	e.save("+14155551234", ToolTurn("look up b", "toolu_b", "found b", "b")...)
	e.save("+14155551234", ToolTurn("look up a again", "toolu_a", "found a", "a")...)
	if err := conversation.ValidateTurn(e.history("+14155551234")); err != nil {
		t.Fatalf("history after an id came back: %v", err)
	}
	// After the conversation expired, every id is free.
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.save("+14155551234", ToolTurn("new day", "toolu_b", "found b", "b")...)

	// Of two turns with one id saved at once, one is stored.
	e.reopen(&conversation.Options{})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			errs[i] = e.mem.SaveTurn(ctx(), "+14150000000", ToolTurn(fmt.Sprint("racer ", i), "toolu_race", "r", "ok"))
		})
	}
	wg.Wait()
	saved := 0
	for _, err := range errs {
		switch {
		case err == nil:
			saved++
		case !errors.Is(err, conversation.ErrInvalidTurn):
			t.Fatalf("concurrent save: %v", err)
		}
	}
	if h := e.history("+14150000000"); saved != 1 || len(h) != 4 {
		t.Fatalf("of 4 turns saved at once with one tool id, %d succeeded and %d messages are stored; want 1 and 4", saved, len(h))
	}

	// A tool_use whose type is written with a JSON escape is a tool_use
	// all the same: its id is held like any other.
	escaped := ToolTurn("look up e", "toolu_e", "found e", "e")
	for i, m := range escaped {
		if bytes.Contains(m.Content, []byte(`"tool_use"`)) {
			escaped[i].Content = bytes.Replace(m.Content, []byte(`"tool_use"`), []byte(`"tool\u005fuse"`), 1)
		}
	}
	e.save("+14155550000", escaped...)
	err = e.mem.SaveTurn(ctx(), "+14155550000", ToolTurn("again", "toolu_e", "found e", "e"))
	if !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("reusing the id of a tool_use whose type has an escape: SaveTurn err = %v, want ErrInvalidTurn", err)
	}
}

func testInvalidPhone(t *testing.T, e *env) {
	for _, phone := range []string{"", " +1415", "+1415\n", string(make([]byte, 65))} {
		if err := e.mem.SaveTurn(ctx(), phone, TextTurn("a", "b")); !errors.Is(err, conversation.ErrInvalidPhone) {
			t.Errorf("SaveTurn(%q) err = %v, want ErrInvalidPhone", phone, err)
		}
		if _, err := e.mem.History(ctx(), phone); !errors.Is(err, conversation.ErrInvalidPhone) {
			t.Errorf("History(%q) err = %v, want ErrInvalidPhone", phone, err)
		}
	}
	if sums, _ := e.mem.List(ctx()); len(sums) != 0 {
		t.Fatalf("invalid phones reached the store: %v", sums)
	}
}

func testReopen(t *testing.T, e *env) {
	a := ToolTurn("find chicken", "toolu_r1", "1. lemon chicken", "1. Lemon chicken")
	b := TextTurn("tell me more about number 1", "It takes 30 minutes.")
	e.save("+14155551234", a...)
	e.clock.Advance(time.Minute)
	e.save("+14155551234", b...)
	e.save("+14155555678", TextTurn("other", "person")...)
	e.reopen(nil)
	assertMessages(t, e.history("+14155551234"), concat(a, b))
	c, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(e.clock.Now()) {
		t.Fatalf("last active after reopen = %v, want %v", c.LastActive, e.clock.Now())
	}
	// The reopened store goes on where the old one stopped.
	e.save("+14155551234", TextTurn("thanks", "welcome")...)
	if h := e.history("+14155551234"); len(h) != 8 {
		t.Fatalf("%d messages after saving into a reopened store, want 8", len(h))
	}
}

func testTurnExtra(t *testing.T, e *env) {
	msgs := TextTurn("hi", "hello")
	msgs[0].Extra = map[string]json.RawMessage{"sent_at": json.RawMessage(`"2026-02-24T10:35:00"`)}
	turn := conversation.Turn{
		Messages: msgs,
		Extra: map[string]json.RawMessage{
			"usage": json.RawMessage(`{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":0}`),
			"model": json.RawMessage(`"claude-x"`),
		},
	}
	if err := e.mem.Save(ctx(), "+14155551234", turn); err != nil {
		t.Fatal(err)
	}
	e.reopen(nil)
	c, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Turns[0].Extra
	if len(got) != 2 || string(got["usage"]) != string(turn.Extra["usage"]) || string(got["model"]) != `"claude-x"` {
		t.Fatalf("turn extras after reopen = %s, want %s", fmtExtra(got), fmtExtra(turn.Extra))
	}
	// A message's own extra keys are kept too, and History returns them.
	if got := c.Turns[0].Messages[0].Extra; len(got) != 1 || string(got["sent_at"]) != `"2026-02-24T10:35:00"` {
		t.Fatalf("message extras after reopen = %s, want %s", fmtExtra(got), fmtExtra(msgs[0].Extra))
	}
	assertMessages(t, e.history("+14155551234"), msgs)
}

// testExtraCompacted: extra keys of messages and turns are stored compacted,
// so History gives the same bytes before and after reopening; invalid JSON
// in them is rejected as an invalid turn, and a message's "role" and
// "content" cannot be extra keys.
func testExtraCompacted(t *testing.T, e *env) {
	msgs := TextTurn("hi", "hello")
	msgs[0].Extra = map[string]json.RawMessage{
		"meta":    json.RawMessage("{ \"a\" : 1,\n \"b\" : [ 1, 2 ] }"),
		"role":    json.RawMessage(`"assistant"`),
		"content": json.RawMessage(`"sneaky"`),
	}
	turn := conversation.Turn{Messages: msgs, Extra: map[string]json.RawMessage{
		"usage":    json.RawMessage(`{ "input_tokens" : 12 }`),
		"messages": json.RawMessage(`[]`),
	}}
	if err := e.mem.Save(ctx(), "+14155551234", turn); err != nil {
		t.Fatal(err)
	}
	want := TextTurn("hi", "hello")
	want[0].Extra = map[string]json.RawMessage{"meta": json.RawMessage(`{"a":1,"b":[1,2]}`)}
	before := e.history("+14155551234")
	assertMessages(t, before, want)
	e.reopen(nil)
	assertMessages(t, e.history("+14155551234"), before)
	c, err := e.mem.Load(ctx(), "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Turns[0].Extra; len(got) != 1 || string(got["usage"]) != `{"input_tokens":12}` {
		t.Fatalf("turn extras after reopen = %d keys, usage %s; want only usage, compacted", len(got), got["usage"])
	}

	for name, bad := range map[string]conversation.Turn{
		"message extra not JSON": {Messages: []conversation.Message{{Role: "user", Content: json.RawMessage(`"hi"`), Extra: map[string]json.RawMessage{"meta": json.RawMessage(`{"a":`)}}}},
		"message extra empty":    {Messages: []conversation.Message{{Role: "user", Content: json.RawMessage(`"hi"`), Extra: map[string]json.RawMessage{"meta": nil}}}},
		"turn extra not JSON":    {Messages: TextTurn("a", "b"), Extra: map[string]json.RawMessage{"usage": json.RawMessage(`nope`)}},
	} {
		if err := e.mem.Save(ctx(), "+14155551234", bad); !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Errorf("%s: Save err = %v, want ErrInvalidTurn", name, err)
		}
	}
	assertMessages(t, e.history("+14155551234"), before)
}

func fmtExtra(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func testClear(t *testing.T, e *env) {
	e.save("+14155551234", TextTurn("hi", "hello")...)
	if err := e.mem.Clear(ctx(), "+14155551234"); err != nil {
		t.Fatal(err)
	}
	if h := e.history("+14155551234"); len(h) != 0 {
		t.Fatalf("History after Clear = %s", dump(h))
	}
	e.reopen(nil)
	if h := e.history("+14155551234"); len(h) != 0 {
		t.Fatalf("History after Clear and reopen = %s", dump(h))
	}
	if err := e.mem.Clear(ctx(), "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("second Clear: err = %v, want ErrNotFound", err)
	}
}

func testList(t *testing.T, e *env) {
	e.save("+3", TextTurn("c", "c")...)
	e.save("+1", TextTurn("a", "a")...)
	e.clock.Advance(conversation.DefaultTimeout)
	e.save("+2", TextTurn("b", "b")...)
	e.save("+2", TextTurn("b2", "b2")...)
	e.clock.Advance(time.Second)
	sums, err := e.mem.List(ctx())
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		phone   string
		turns   int
		expired bool
	}
	var got []row
	for _, s := range sums {
		got = append(got, row{s.Phone, s.Turns, s.Expired})
	}
	want := []row{{"+1", 1, true}, {"+2", 2, false}, {"+3", 1, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	if !sums[1].LastActive.Equal(Start.Add(conversation.DefaultTimeout)) {
		t.Fatalf("List last active = %v, want %v", sums[1].LastActive, Start.Add(conversation.DefaultTimeout))
	}
	// List does not delete.
	if _, err := e.mem.Load(ctx(), "+1"); err != nil {
		t.Fatalf("List deleted an expired conversation: %v", err)
	}
}

func testConcurrent(t *testing.T, e *env) {
	e.reopen(&conversation.Options{MaxTurns: 1000})
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("+1000000000%d", w)
			for i := range each {
				for _, phone := range []string{own, "+19999999999"} {
					err := e.mem.SaveTurn(ctx(), phone, TextTurn(fmt.Sprintf("w%d i%d", w, i), "ok"))
					if err != nil {
						errs <- err
					}
					if _, err := e.mem.History(ctx(), phone); err != nil {
						errs <- err
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
	if h := e.history("+19999999999"); len(h) != 2*workers*each {
		t.Fatalf("shared phone has %d messages, want %d: concurrent saves were lost", len(h), 2*workers*each)
	}
	for w := range workers {
		h := e.history(fmt.Sprintf("+1000000000%d", w))
		if len(h) != 2*each {
			t.Fatalf("worker %d's phone has %d messages, want %d", w, len(h), 2*each)
		}
		for i := range each {
			if got, want := h[2*i].Text(), fmt.Sprintf("w%d i%d", w, i); got != want {
				t.Fatalf("worker %d turn %d = %q, want %q", w, i, got, want)
			}
		}
	}
	e.reopen(nil)
	if h := e.history("+19999999999"); len(h) != 2*workers*each {
		t.Fatalf("after reopening, the shared phone has %d messages, want %d", len(h), 2*workers*each)
	}
}
