package assistant_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

// TestSummarizer: the summarizer asks the cheaper model, through the
// official SDK and the fake's rules, with the notes the person sees (never
// another's private ones), the summary so far and the leaving turns; its
// answer becomes the summary and its tokens go to the person's ledger.
func TestSummarizer(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC))
	srv := anthropictest.NewServer(t)
	srv.SetNow(clock.Now)
	fam := conversation.Family{ID: "smiths", Members: map[string]string{erin: "Erin", jason: "Jason"}}
	mem, err := conversation.New(memstore.New(), &conversation.Options{Now: clock.Now,
		Summarize: func(p string) bool { _, ok := fam.Members[p]; return ok }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, n := range []struct{ who, scope, text string }{
		{erin, "family", "Emma is allergic to peanuts"},
		{erin, "private", "Erin's surprise party for Jason is on May 3"},
		{jason, "private", "Jason's secret: gift is a bike"},
	} {
		if _, _, err := mem.AddNote(ctx, fam, n.who, conversation.NewNote{Text: n.text, Scope: n.scope}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := assistant.NewSummarizer(srv.Client(), mem, &assistant.SummarizerOptions{Family: fam})
	if err != nil {
		t.Fatal(err)
	}
	tool := conversation.NewMessage(conversation.RoleAssistant, json.RawMessage(`{"type":"tool_use","id":"toolu_s1","name":"lists","input":{"list":"groceries"}}`))
	result := conversation.NewMessage(conversation.RoleUser, json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_s1","content":"milk, eggs"}`))
	turns := [][]conversation.Message{
		{conversation.UserText("we decided: pizza on Sunday at 6"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Pizza Sunday 6pm, got it."))},
		{conversation.UserText("what's on the grocery list?"), tool, result, conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Milk and eggs."))},
	}
	for _, msgs := range turns {
		if err := mem.SaveTurn(ctx, erin, msgs); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	if ok, err := mem.Expire(ctx, erin); !ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	srv.Enqueue(anthropictest.Text("- Pizza on Sunday at 6pm was decided.\n- Grocery list: milk, eggs."))
	s, err := mem.FoldSummary(ctx, erin, sum)
	if err != nil {
		t.Fatal(err)
	}
	if want := "- Pizza on Sunday at 6pm was decided.\n- Grocery list: milk, eggs."; s.Text != want || s.Pending != 0 || len(s.NoteIDs) != 2 {
		t.Errorf("summary = %+v, want %q made with Erin's 2 notes", s, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Params.Model != assistant.DefaultSummaryModel || r.Params.MaxTokens != assistant.DefaultSummaryMaxTokens {
		t.Errorf("model %q, max_tokens %d; want %q, %d", r.Params.Model, r.Params.MaxTokens, assistant.DefaultSummaryModel, assistant.DefaultSummaryMaxTokens)
	}
	body := string(r.Body)
	for _, want := range []string{"#1 (family) Emma is allergic to peanuts", "#2 (private) Erin's surprise party", "pizza on Sunday at 6", "[assistant used lists", "milk, eggs", "Never restate a note"} {
		if !strings.Contains(body, want) {
			t.Errorf("the summarizer's request lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "bike") {
		t.Errorf("the summarizer of Erin was shown Jason's private note:\n%s", body)
	}
	days, err := mem.UsageSince(ctx, time.Time{})
	if err != nil || len(days) != 1 || days[0].Phone != erin || days[0].Usage.Calls != 1 || days[0].Usage.Messages != 0 || days[0].Usage.OutputTokens == 0 {
		t.Errorf("ledger = %+v, %v; want Erin's one summarizer call, no message", days, err)
	}

	// The next fold starts from this summary.
	if err := mem.SaveTurn(ctx, erin, []conversation.Message{conversation.UserText("soccer moved to 9am"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("OK"))}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	mem.Expire(ctx, erin)
	srv.Enqueue(anthropictest.Text("- Pizza Sunday 6pm.\n- Soccer at 9am."))
	if _, err := mem.FoldSummary(ctx, erin, sum); err != nil {
		t.Fatal(err)
	}
	body = string(srv.Requests()[1].Body)
	if !strings.Contains(body, "Grocery list: milk, eggs.") || !strings.Contains(body, "soccer moved to 9am") || strings.Contains(body, "pizza on Sunday at 6") {
		t.Errorf("the second fold's request should hold the summary so far and the new turn only:\n%s", body)
	}
}

// TestSummarizerFailureKeepsTurns: an API error leaves the turns pending.
func TestSummarizerFailureKeepsTurns(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC))
	srv := anthropictest.NewServer(t)
	mem, _ := conversation.New(memstore.New(), &conversation.Options{Now: clock.Now, Summarize: func(string) bool { return true }})
	sum, _ := assistant.NewSummarizer(srv.Client(), mem, nil)
	ctx := t.Context()
	mem.SaveTurn(ctx, erin, []conversation.Message{conversation.UserText("hello"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("hi"))})
	clock.Advance(conversation.DefaultTimeout + time.Second)
	mem.Expire(ctx, erin)
	srv.Enqueue(anthropictest.Fail(400, "invalid_request_error", "bad"))
	if _, err := mem.FoldSummary(ctx, erin, sum); err == nil {
		t.Fatal("FoldSummary after an API error returned nil")
	}
	if s, _ := mem.LoadSummary(ctx, erin); s.Pending != 1 || s.Text != "" {
		t.Errorf("after a failed fold: %+v, want the turn pending", s)
	}
}

// summariesEnv returns an assistant for Erin and Jason with summaries on
// and notes as given (nil: off), its memory keeping both their summaries,
// and the fake API and the clock they share.
func summariesEnv(t *testing.T, notes *assistant.NotesOptions) (*storetest.Clock, *anthropictest.Server, *conversation.Memory, *assistant.Assistant) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC))
	srv := anthropictest.NewServer(t)
	srv.SetNow(clock.Now)
	mem, err := conversation.New(memstore.New(), &conversation.Options{Now: clock.Now,
		Summarize: func(p string) bool { return p == erin || p == jason }})
	if err != nil {
		t.Fatal(err)
	}
	a, err := assistant.New(srv.Client(), mem, &assistant.Options{Now: clock.Now,
		Family: map[string]assistant.Person{erin: {Name: "Erin"}, jason: {Name: "Jason"}},
		Notes:  notes, Summaries: &assistant.SummarizerOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	return clock, srv, mem, a
}

// TestSummaryShownWithoutNotes: with summaries on and notes off, the next
// session's request shows the person's summary, and no note tools.
func TestSummaryShownWithoutNotes(t *testing.T) {
	clock, srv, _, a := summariesEnv(t, nil)
	ctx := t.Context()
	srv.Enqueue(anthropictest.Text("Pizza on Sunday at 6, noted."))
	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "we decided: pizza on Sunday at 6"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	const summary = "- Pizza on Sunday at 6pm was decided."
	srv.Enqueue(anthropictest.Text(summary), anthropictest.Text("Pizza, at 6."))
	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "what did we decide for Sunday?"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[1].Params.Model != assistant.DefaultSummaryModel {
		t.Fatalf("%d requests, want the reply, the fold and the reply", len(reqs))
	}
	last := reqs[2]
	if want := conversation.RenderMemory(nil, summary); !strings.Contains(string(last.Params.System), string(mustJSON(want))) {
		t.Errorf("the new session's request does not show the summary:\n%s", last.Params.System)
	}
	if strings.Contains(string(last.Body), `"remember"`) {
		t.Errorf("with notes off the request offers the note tools:\n%s", last.Params.Tools)
	}
	if rej := srv.Rejected(); len(rej) > 0 {
		t.Errorf("the fake API rejected: %v", rej)
	}
}

// TestForgetDuringSessionFold: Jason forgets a family note while Erin's
// first message of a session is folding her summary; her requests show
// neither the note nor the summary's line holding it.
func TestForgetDuringSessionFold(t *testing.T) {
	clock, srv, mem, a := summariesEnv(t, &assistant.NotesOptions{})
	ctx := t.Context()
	const note = "Emma is allergic to peanuts"
	fam := notesFamily()
	if _, _, err := mem.AddNote(ctx, fam, erin, conversation.NewNote{Text: note, Scope: "family"}); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(anthropictest.Text("Pizza on Sunday at 6, noted."))
	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "we decided: pizza on Sunday at 6"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	// The summarizer restates the note it is shown, and Jason forgets it
	// while it writes.
	srv.Route(assistant.DefaultSummaryModel, func(anthropictest.Request) anthropictest.Response {
		if _, err := mem.ForgetNote(ctx, fam, jason, 1); err != nil {
			t.Error(err)
		}
		return anthropictest.Text("- " + note + "\n- Pizza on Sunday at 6pm.")
	})
	srv.Enqueue(anthropictest.Text("Pizza, at 6."))
	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "what did we decide for Sunday?"}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.Params.Model == assistant.DefaultSummaryModel || !strings.Contains(string(last.Params.System), "Pizza on Sunday at 6pm.") {
		t.Fatalf("the last request is not Erin's reply with her summary:\n%s", last.Params.System)
	}
	if strings.Contains(strings.ToLower(string(last.Body)), "peanuts") {
		t.Errorf("Erin's request after the forget holds the note's text:\n%s", last.Params.System)
	}
	c, err := mem.Load(ctx, erin)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Shown(); len(s.Notes) != 0 || strings.Contains(s.Summary, "peanuts") {
		t.Errorf("Erin's session stores %+v", s)
	}
}
