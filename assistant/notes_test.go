package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
)

// notesEnv is an env with the family's notes on.
func notesEnv(t *testing.T, opts *assistant.Options) *env {
	t.Helper()
	var o assistant.Options
	if opts != nil {
		o = *opts
	}
	o.Notes = &assistant.NotesOptions{}
	return newEnv(t, &o)
}

// notesFamily is the family the assistant's notes use in these tests.
func notesFamily() conversation.Family {
	return conversation.Family{ID: conversation.DefaultFamilyID, Claim: true,
		Members: map[string]string{erin: "Erin", jason: "Jason"}}
}

// toolNames returns the names of a request's tools.
func toolNames(t *testing.T, r anthropictest.Request) []string {
	t.Helper()
	var tools []struct {
		Name string `json:"name"`
	}
	if len(r.Params.Tools) > 0 {
		if err := json.Unmarshal(r.Params.Tools, &tools); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// systemBlocks returns a request's system blocks, bytes as sent.
func systemBlocks(t *testing.T, r anthropictest.Request) []json.RawMessage {
	t.Helper()
	var blocks []json.RawMessage
	if err := json.Unmarshal(r.Params.System, &blocks); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// memoryOf returns a request's memory block (its second system block),
// or nil.
func memoryOf(t *testing.T, r anthropictest.Request) json.RawMessage {
	t.Helper()
	if b := systemBlocks(t, r); len(b) > 1 {
		return b[1]
	}
	return nil
}

// noteResult returns the content of the tool_result answering id in a
// request.
func noteResult(t *testing.T, r anthropictest.Request, id string) (string, bool) {
	t.Helper()
	for _, m := range sent(t, r) {
		blocks, _ := m.Blocks()
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == id {
				var s string
				json.Unmarshal(b.Content, &s)
				return s, b.IsError
			}
		}
	}
	t.Fatalf("no tool_result for %s in the request", id)
	return "", false
}

func remember(id, text, scope string, replaces int) anthropictest.Call {
	in := map[string]any{"text": text, "scope": scope}
	if replaces > 0 {
		in["replaces"] = replaces
	}
	return anthropictest.Call{ID: id, Name: "remember", Input: in}
}

func forget(id string, note int) anthropictest.Call {
	return anthropictest.Call{ID: id, Name: "forget", Input: map[string]any{"id": note}}
}

// TestNotesOnlyForTheFamily: the family's members are offered remember and
// forget; strangers and the system sender are not, a call of theirs is
// refused and writes nothing, and they are shown no memory.
func TestNotesOnlyForTheFamily(t *testing.T) {
	reg, err := assistant.NewRegistry(echoTool("echo"))
	if err != nil {
		t.Fatal(err)
	}
	e := notesEnv(t, &assistant.Options{Tools: reg})
	if _, _, err := e.mem.AddNote(context.Background(), notesFamily(), erin, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family"}); err != nil {
		t.Fatal(err)
	}
	e.srv.Enqueue(anthropictest.Text("Hi Erin"))
	e.mustHandle(erin, "hi")
	r := e.lastRequest()
	if got := strings.Join(toolNames(t, r), ","); got != "echo,remember,forget" {
		t.Errorf("Erin's tools = %q, want echo,remember,forget", got)
	}
	if mem := memoryOf(t, r); !bytes.Contains(mem, []byte("#1 (family) Emma is allergic to peanuts")) {
		t.Errorf("Erin's memory block = %s, want note #1", mem)
	}
	for _, who := range []string{stranger, conversation.SystemSender} {
		e.srv.Enqueue(anthropictest.ToolUse("", remember("toolu_s1", "I am the boss", "family", 0)), anthropictest.Text("ok"))
		e.mustHandle(who, "remember I am the boss")
		reqs := e.srv.Requests()
		first, second := reqs[len(reqs)-2], reqs[len(reqs)-1]
		if names := strings.Join(toolNames(t, first), ","); names != "echo" {
			t.Errorf("%s was offered tools %q, want echo only", who, names)
		}
		if mem := memoryOf(t, first); mem != nil {
			t.Errorf("%s was shown memory %s", who, mem)
		}
		if out, isErr := noteResult(t, second, "toolu_s1"); !isErr || !strings.Contains(out, "no tool") {
			t.Errorf("%s's remember call = %q (error %v), want refused", who, out, isErr)
		}
	}
	notes, err := e.mem.Notes(context.Background(), notesFamily(), erin)
	if err != nil || len(notes) != 1 {
		t.Errorf("notes after the strangers' calls = %+v, %v; want Erin's one", notes, err)
	}
}

// TestNotesSession: a note written during a session reaches the model
// through the tool round only; the memory block stays the same bytes for
// every request of the session, and the next session shows the note, to
// every member for a family note.
func TestNotesSession(t *testing.T) {
	e := notesEnv(t, nil)
	e.srv.Enqueue(
		anthropictest.ToolUse("", remember("toolu_r1", "Emma is allergic to peanuts", "family", 0)),
		anthropictest.Text("Noted as #1; say 'forget 1' to remove it."),
	)
	e.mustHandle(erin, "remember that Emma is allergic to peanuts")
	reqs := e.srv.Requests()
	if out, isErr := noteResult(t, reqs[1], "toolu_r1"); isErr || !strings.HasPrefix(out, "Noted as #1 (family).") {
		t.Fatalf("remember's result = %q (error %v), want \"Noted as #1 (family).\"", out, isErr)
	}
	if memoryOf(t, reqs[0]) != nil || memoryOf(t, reqs[1]) != nil {
		t.Error("the session that wrote the note shows it in the system prompt; it should come through the tool round only")
	}
	e.clock.Advance(time.Minute)
	e.srv.Enqueue(anthropictest.Text("Sure."))
	e.mustHandle(erin, "thanks")
	if !bytes.Equal(e.lastRequest().Params.System, reqs[0].Params.System) {
		t.Error("the system prompt changed within a session")
	}

	// The next session shows it, the same bytes for each request.
	e.clock.Advance(conversation.DefaultTimeout + time.Minute)
	e.srv.Enqueue(anthropictest.Text("Hi."), anthropictest.Text("Peanuts."))
	e.mustHandle(erin, "hello again")
	first := e.lastRequest()
	mem := memoryOf(t, first)
	if !bytes.Contains(mem, []byte(`#1 (family) Emma is allergic to peanuts`)) {
		t.Fatalf("the next session's memory = %s, want note #1", mem)
	}
	e.clock.Advance(time.Minute)
	e.mustHandle(erin, "what is Emma allergic to?")
	if !bytes.Equal(e.lastRequest().Params.System, first.Params.System) {
		t.Errorf("the memory changed within a session:\n%s\n%s", e.lastRequest().Params.System, first.Params.System)
	}
	e.srv.Enqueue(anthropictest.Text("Hi Jason."))
	e.mustHandle(jason, "hi")
	if !bytes.Contains(memoryOf(t, e.lastRequest()), []byte("#1 (family) Emma")) {
		t.Error("Jason is not shown the family note")
	}
}

// TestNotesSessionAcrossAssistants: the memory stored with a session comes
// back as the same bytes in another assistant on the same store, as
// `mombot ask` runs one process per message, even after the notes
// changed.
func TestNotesSessionAcrossAssistants(t *testing.T) {
	e := notesEnv(t, nil)
	ctx := context.Background()
	e.mem.AddNote(ctx, notesFamily(), erin, conversation.NewNote{Text: "Soccer is on Saturdays", Scope: "family"})
	e.srv.Enqueue(anthropictest.Text("Hi."), anthropictest.Text("Saturday."))
	e.mustHandle(erin, "hi")
	first := e.lastRequest()
	e.mem.AddNote(ctx, notesFamily(), jason, conversation.NewNote{Text: "Jason is away on Monday", Scope: "family"})
	other, err := assistant.New(e.srv.Client(), e.mem, &assistant.Options{Family: map[string]assistant.Person{erin: {Name: "Erin"}, jason: {Name: "Jason"}},
		Now: e.clock.Now, Notes: &assistant.NotesOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if _, err := other.Handle(ctx, assistant.Inbound{From: erin, Text: "when is soccer?"}); err != nil {
		t.Fatal(err)
	}
	if got := memoryOf(t, e.lastRequest()); !bytes.Equal(got, memoryOf(t, first)) {
		t.Errorf("another assistant rendered the session's memory as\n%s\nwant\n%s", got, memoryOf(t, first))
	}
}

// TestNotesForgetAtOnce: a forget takes the note out of the very next
// request, inside the session, and out of every stored record; the rest
// of the session shows the re-rendered memory, the same bytes each time.
func TestNotesForgetAtOnce(t *testing.T) {
	e := notesEnv(t, nil)
	ctx := context.Background()
	fam := notesFamily()
	// Erin had it written in an earlier session, with a message id.
	e.srv.Enqueue(anthropictest.ToolUse("", remember("toolu_r1", "Emma is allergic to peanuts", "family", 0)), anthropictest.Text("Noted as #1."))
	if _, err := e.a.Handle(ctx, assistant.Inbound{From: erin, Text: "remember: emma is allergic to peanuts", ID: "wamid.r1"}); err != nil {
		t.Fatal(err)
	}
	e.mem.AddNote(ctx, fam, erin, conversation.NewNote{Text: "Soccer is on Saturdays", Scope: "family"})
	e.clock.Advance(conversation.DefaultTimeout + time.Minute)
	e.srv.Enqueue(anthropictest.Text("Hi."))
	e.mustHandle(jason, "hi")
	if !bytes.Contains(memoryOf(t, e.lastRequest()), []byte("peanuts")) {
		t.Fatal("Jason's session does not show note #1")
	}

	e.clock.Advance(time.Minute)
	e.srv.Enqueue(anthropictest.ToolUse("", forget("toolu_f1", 1)), anthropictest.Text("Forgotten."))
	e.mustHandle(jason, "forget 1")
	reqs := e.srv.Requests()
	after := reqs[len(reqs)-1]
	if out, isErr := noteResult(t, after, "toolu_f1"); isErr || !strings.HasPrefix(out, "Forgot #1") {
		t.Fatalf("forget's result = %q (error %v)", out, isErr)
	}
	mem := memoryOf(t, after)
	if bytes.Contains(mem, []byte("peanuts")) || !bytes.Contains(mem, []byte("#2 (family) Soccer is on Saturdays")) {
		t.Fatalf("the request after the forget shows %s, want #2 only", mem)
	}
	e.clock.Advance(time.Minute)
	e.srv.Enqueue(anthropictest.Text("Saturday."))
	e.mustHandle(jason, "when is soccer?")
	if got := memoryOf(t, e.lastRequest()); !bytes.Equal(got, mem) {
		t.Errorf("the next request of the session shows\n%s\nwant the re-rendered\n%s", got, mem)
	}
	for _, kind := range conversation.Kinds {
		recs, _ := e.mem.Store().List(ctx, kind, "")
		for _, r := range recs {
			if bytes.Contains(bytes.ToLower(r.Data), []byte("peanuts")) {
				t.Errorf("%s %q still holds the forgotten text: %s", kind, r.Key, r.Data)
			}
		}
	}
	// And no request after the forget holds it.
	for _, r := range e.srv.Requests()[len(reqs)-1:] {
		if bytes.Contains(bytes.ToLower(r.Body), []byte("peanuts")) {
			t.Errorf("a request after the forget holds the text: %s", r.Body)
		}
	}
}

// TestNotesWrittenAndForgottenInOneMessage: a note written and forgotten
// in one message leaves the turn stored forgotten and the message out of
// the recent messages.
func TestNotesWrittenAndForgottenInOneMessage(t *testing.T) {
	e := notesEnv(t, nil)
	ctx := context.Background()
	e.srv.Enqueue(
		anthropictest.ToolUse("", remember("toolu_r1", "the safe code is 4321", "private", 0)),
		anthropictest.ToolUse("", forget("toolu_f1", 1)),
		anthropictest.Text("Done, forgotten."),
	)
	if _, err := e.a.Handle(ctx, assistant.Inbound{From: erin, Text: "note the safe code is 4321, no wait, forget it", ID: "wamid.x"}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range conversation.Kinds {
		recs, _ := e.mem.Store().List(ctx, kind, "")
		for _, r := range recs {
			if bytes.Contains(r.Data, []byte("4321")) {
				t.Errorf("%s %q still holds the forgotten text: %s", kind, r.Key, r.Data)
			}
		}
	}
	if h := e.history(erin); len(h) == 0 || h[0].Text() != conversation.Forgotten {
		t.Errorf("the stored turn = %s, want it forgotten", dump(h))
	}
}

// TestNotesErrors: the tools' errors are ones the model can act on, and
// another person's private note is "no note #N", as an unknown one.
func TestNotesErrors(t *testing.T) {
	e := notesEnv(t, nil)
	ctx := context.Background()
	e.mem.AddNote(ctx, notesFamily(), erin, conversation.NewNote{Text: "the gift is in the garage", Scope: "private"})
	long := strings.Repeat("x", conversation.MaxNoteText+1)
	e.srv.Enqueue(
		anthropictest.ToolUse("",
			forget("toolu_1", 1), forget("toolu_2", 7),
			remember("toolu_3", "gift moved", "family", 1),
			remember("toolu_4", long, "family", 0),
			remember("toolu_5", "x", "everyone", 0),
			anthropictest.Call{ID: "toolu_6", Name: "forget", Input: map[string]any{}},
		),
		anthropictest.Text("Sorry."),
	)
	e.mustHandle(jason, "forget 1 and 7")
	r := e.lastRequest()
	tests := []struct{ id, want string }{
		{"toolu_1", "no note #1"},
		{"toolu_2", "no note #7"},
		{"toolu_3", "no note #1 to replace"},
		{"toolu_4", "a note may be at most 500 characters"},
		{"toolu_5", `scope must be "family" or "private"`},
		{"toolu_6", "give the note's number"},
	}
	for _, tt := range tests {
		out, isErr := noteResult(t, r, tt.id)
		if !isErr || !strings.HasPrefix(out, tt.want) {
			t.Errorf("%s = %q (error %v), want an error starting %q", tt.id, out, isErr, tt.want)
		}
	}
	if n, _ := e.mem.Notes(ctx, notesFamily(), erin); len(n) != 1 {
		t.Errorf("Erin's private note was touched: %+v", n)
	}
}

// TestNotesBreakpoints: with tools and instructions long enough to cache,
// the memory block carries a breakpoint of its own, and a request has at
// most four (the fake refuses more, and a 1h one after a 5m one).
func TestNotesBreakpoints(t *testing.T) {
	for _, ttl := range []string{assistant.TTLAuto, assistant.TTL5m, assistant.TTL1h} {
		t.Run(ttl, func(t *testing.T) {
			e := notesEnv(t, &assistant.Options{SystemPrompt: strings.Repeat("Be kind and brief. ", 300), CacheTTL: ttl})
			e.mem.AddNote(context.Background(), notesFamily(), erin, conversation.NewNote{Text: "Soccer is on Saturdays", Scope: "family"})
			for i := range 3 {
				e.srv.Enqueue(anthropictest.Text("Sure."))
				e.mustHandle(erin, "message")
				e.clock.Advance(time.Duration(i*7) * time.Minute)
			}
			r := e.lastRequest()
			if mem := memoryOf(t, r); !bytes.Contains(mem, []byte(`"cache_control"`)) {
				t.Errorf("the memory block has no breakpoint: %s", mem)
			}
			if n := bytes.Count(r.Body, []byte(`"cache_control"`)); n > 4 {
				t.Errorf("%d breakpoints in a request, the API allows 4", n)
			}
		})
	}
}
