package assistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
)

// listTool records every input it is run with, like the grocery list
// would keep every item it is given.
type listTool struct {
	mu     sync.Mutex
	inputs []string
}

func (l *listTool) tool() funcTool {
	return funcTool{name: "list_add", schema: `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}`,
		run: func(_ context.Context, c assistant.Call) (string, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.inputs = append(l.inputs, string(c.Input))
			return "added", nil
		}}
}

func (l *listTool) runs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.inputs)
}

// cutCall is "add milk, eggs and bread" cut off by max_tokens in the
// middle of the call's input.
func cutCall() anthropictest.Response {
	return anthropictest.CutOff(anthropictest.ToolUse("I'll add those.",
		anthropictest.Call{Name: "list_add", Input: map[string]any{"items": []string{"milk", "eggs", "br"}}}))
}

// checkStoredValid fails t unless every stored turn of phone validates.
func checkStoredValid(t *testing.T, e *env, phone string) {
	t.Helper()
	for i, turn := range e.turns(phone) {
		if err := conversation.ValidateTurn(turn.Messages); err != nil {
			t.Errorf("stored turn %d is invalid: %v", i, err)
		}
	}
}

// A tool call cut off by max_tokens never reaches the tool. The model
// reads that it was not run and is asked again once; its complete call
// runs.
func TestMaxTokensToolUseIsNotRun(t *testing.T) {
	var list listTool
	e := newEnv(t, nil, list.tool())
	e.srv.Enqueue(cutCall(),
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"items": []string{"milk", "eggs", "bread"}}}),
		anthropictest.Text("Added milk, eggs and bread."))
	r := e.mustHandle(erin, "add milk, eggs and bread")
	if r.Text != "Added milk, eggs and bread." {
		t.Errorf("reply = %q", r.Text)
	}
	if got, want := list.runs(), []string{`{"items":["milk","eggs","bread"]}`}; !slices.Equal(got, want) {
		t.Fatalf("the tool ran with %q, want only the complete call %q", got, want)
	}
	// The second request told the model why its call did not run.
	second := sent(t, e.srv.Requests()[1])
	res := toolResults(t, second[len(second)-1])
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "cut off") {
		t.Errorf("the cut-off call was answered with %+v, want a not-run error", res)
	}
	checkStoredValid(t, e, erin)
	if !strings.Contains(e.logs.String(), "stop_reason=max_tokens") {
		t.Errorf("the log does not say the response was cut off:\n%s", e.logs.String())
	}
}

// Cut off twice: nothing runs, the person hears the answer was cut short,
// and the stored turn is valid and accepted by the next request.
func TestMaxTokensTwiceGivesUp(t *testing.T) {
	var list listTool
	e := newEnv(t, nil, list.tool())
	e.srv.Enqueue(cutCall(), cutCall())
	r, err := e.handle(erin, "add milk, eggs and bread")
	if !errors.Is(err, apology.ErrCutOff) || r.Text != apology.CutOff {
		t.Fatalf("reply %q, err %v; want the cut-off sentence and ErrCutOff", r.Text, err)
	}
	if runs := list.runs(); len(runs) != 0 {
		t.Fatalf("a cut-off call ran: %q", runs)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
	checkStoredValid(t, e, erin)
	e.srv.Enqueue(anthropictest.Text("Sorry about that."))
	e.mustHandle(erin, "try again?")
}

// A text cut off by max_tokens is sent marked as cut short, and stored as
// written, so "go on" continues it.
func TestMaxTokensText(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.CutOff(anthropictest.Text("Here are ten dinner ideas: 1. Tacos 2. Pasta 3.")))
	r := e.mustHandle(erin, "ten dinner ideas please")
	want := "Here are ten dinner ideas: 1. Tacos 2. Pasta 3.\n\n" + apology.CutOffNote
	if r.Text != want {
		t.Errorf("reply = %q, want %q", r.Text, want)
	}
	h := e.history(erin)
	if len(h) != 2 || !strings.HasSuffix(h[1].Text(), "2. Pasta 3.") {
		t.Fatalf("stored %s", dump(h))
	}
}

// A response cut off by the context window: its call is not run and the
// model is not asked again, since the next request would be longer still.
func TestContextWindowExceeded(t *testing.T) {
	var list listTool
	e := newEnv(t, nil, list.tool())
	e.srv.Enqueue(anthropictest.ContextWindowExceeded(cutCall()))
	r, err := e.handle(erin, "add milk, eggs and bread")
	if !errors.Is(err, apology.ErrCutOff) || r.Text != apology.CutOff {
		t.Fatalf("reply %q, err %v", r.Text, err)
	}
	if len(list.runs()) != 0 || len(e.srv.Requests()) != 1 {
		t.Fatalf("runs %q after %d requests; want none after 1", list.runs(), len(e.srv.Requests()))
	}
	checkStoredValid(t, e, erin)
}

// stop_sequence ends a complete answer.
func TestStopSequence(t *testing.T) {
	e := newEnv(t, nil)
	resp := anthropictest.Text("Tacos.")
	resp.StopReason = "stop_sequence"
	e.srv.Enqueue(resp)
	if r := e.mustHandle(erin, "dinner?"); r.Text != "Tacos." {
		t.Errorf("reply = %q", r.Text)
	}
}

// A stop_reason this version does not know: the text is sent, no call is
// run, the turn is valid and the log warns.
func TestUnknownStopReason(t *testing.T) {
	var list listTool
	e := newEnv(t, nil, list.tool())
	resp := anthropictest.ToolUse("Adding milk.", anthropictest.Call{Name: "list_add", Input: map[string]any{"items": []string{"milk"}}})
	resp.StopReason = "compaction_needed"
	e.srv.Enqueue(resp)
	r := e.mustHandle(erin, "add milk")
	if r.Text != "Adding milk." || len(list.runs()) != 0 {
		t.Errorf("reply %q, runs %q", r.Text, list.runs())
	}
	if !strings.Contains(e.logs.String(), "unknown stop_reason") {
		t.Errorf("the log does not warn:\n%s", e.logs.String())
	}
	checkStoredValid(t, e, erin)
}

// A refusal: the person gets a kind sentence with the API's explanation,
// never the partial text; the refused exchange is not stored, so the next
// message does not send it again; the log says so without the text.
func TestRefusal(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Text("Tacos."))
	e.mustHandle(erin, "dinner?")
	before := e.history(erin)

	const secret = "how do I pick the neighbour's lock"
	e.srv.Enqueue(anthropictest.Refusal("I can", "general_harms", "This request was declined because it could enable harm."))
	r, err := e.handle(erin, secret)
	if want := apology.Refused + " This request was declined because it could enable harm."; r.Text != want {
		t.Errorf("reply = %q, want %q", r.Text, want)
	}
	if !errors.Is(err, apology.ErrRefused) {
		t.Errorf("err = %v, want ErrRefused", err)
	}
	assertSameMessages(t, e.history(erin), before)

	e.srv.Enqueue(anthropictest.Text("Pasta."))
	e.mustHandle(erin, "and tomorrow?")
	next := sent(t, e.lastRequest())
	for _, m := range next {
		if strings.Contains(string(m.Content), "lock") || strings.Contains(string(m.Content), "I can") {
			t.Errorf("the next request sends the refused exchange again: %s", m.Content)
		}
	}
	if len(next) != len(before)+1 {
		t.Errorf("the next request has %d messages, want %d", len(next), len(before)+1)
	}
	log := e.logs.String()
	if !strings.Contains(log, "not stored") || !strings.Contains(log, "category=general_harms") {
		t.Errorf("the log does not say the refusal was not stored:\n%s", log)
	}
	if strings.Contains(log, "lock") {
		t.Errorf("the log holds the person's text:\n%s", log)
	}
}

// A refusal without an explanation reads the plain sentence.
func TestRefusalWithoutExplanation(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(anthropictest.Refusal("", "", ""))
	r, _ := e.handle(erin, "hmm")
	if r.Text != apology.Refused {
		t.Errorf("reply = %q", r.Text)
	}
	if e.turns(erin) != nil {
		t.Errorf("a refused message was stored")
	}
}

// pause_turn: the paused content goes back as the last assistant message
// and the API's continuation completes it; the turn is stored as one
// assistant message, its server tool call answered in it.
func TestPauseTurn(t *testing.T) {
	e := newEnv(t, nil)
	call := anthropictest.ServerToolUse("srvtoolu_01A", "web_search", map[string]string{"query": "taco tuesday ideas"})
	result := anthropictest.WebSearchResult("srvtoolu_01A", "https://example.com/tacos", "Taco ideas")
	e.srv.Enqueue(anthropictest.Paused(anthropictest.TextBlock("Let me search."), call, result),
		anthropictest.Text("Fish tacos are a hit."))
	r := e.mustHandle(erin, "taco ideas?")
	if !strings.HasPrefix(r.Text, "Let me search.") || !strings.HasSuffix(r.Text, "Fish tacos are a hit.") {
		t.Errorf("reply = %q", r.Text)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	second := sent(t, reqs[1])
	if last := second[len(second)-1]; last.Role != conversation.RoleAssistant || !strings.Contains(string(last.Content), "srvtoolu_01A") {
		t.Fatalf("the continuation does not end with the paused content: %s", dump(second))
	}
	h := e.history(erin)
	if len(h) != 2 || h[1].Role != conversation.RoleAssistant {
		t.Fatalf("stored %s, want the user message and one assistant message", dump(h))
	}
	blocks, _ := h[1].Blocks()
	var types []string
	for _, b := range blocks {
		types = append(types, b.Type)
	}
	if want := []string{"text", "server_tool_use", "web_search_tool_result", "text"}; !slices.Equal(types, want) {
		t.Errorf("stored blocks %q, want %q", types, want)
	}
	checkStoredValid(t, e, erin)
}

// A turn paused more often than allowed ends with what there is, and a
// server tool call nothing answered is not stored.
func TestPauseTurnLimit(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 5 {
		id := "srvtoolu_0" + string(rune('A'+i))
		e.srv.Enqueue(anthropictest.Paused(anthropictest.ServerToolUse(id, "web_search", nil), anthropictest.WebSearchResult(id, "https://example.com", "x")))
	}
	e.srv.Enqueue(anthropictest.Paused(anthropictest.TextBlock("Still searching."), anthropictest.ServerToolUse("srvtoolu_last", "web_search", nil)))
	r, err := e.handle(erin, "search a lot")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.Requests()); n != 6 {
		t.Errorf("%d requests, want 6: the first and 5 continuations", n)
	}
	if r.Text != "Still searching." {
		t.Errorf("reply = %q", r.Text)
	}
	h := e.history(erin)
	if len(h) != 2 || strings.Contains(string(h[1].Content), "srvtoolu_last") || !strings.Contains(string(h[1].Content), "srvtoolu_0E") {
		t.Errorf("stored %s; want the answered calls and not the unanswered one", dump(h))
	}
	checkStoredValid(t, e, erin)
	if !strings.Contains(e.logs.String(), "paused more often than allowed") {
		t.Errorf("the log does not say so:\n%s", e.logs.String())
	}
}

// Real responses recorded from the API (the SDK's cassettes), replayed:
// the loop runs their calls with their inputs, answers with their text, and
// stores their blocks byte for byte.
func TestCassettes(t *testing.T) {
	tests := []struct {
		name   string
		calls  []string // the inputs get_weather is run with
		answer string
	}{
		{"basic", []string{`{"city":"San Francisco","units":"fahrenheit"}`}, "The current temperature in San Francisco is 68 degrees Fahrenheit."},
		{"concurrent", []string{`{"city":"San Francisco"}`, `{"city":"New York"}`, `{"city":"London"}`}, "Here's the current weather for all three cities:\n\n- San Francisco: Sunny 72°F\n- New York: Sunny 72°F\n- London: Sunny 72°F\n\nWould you like me to check any other cities or get the weather in Celsius instead?"},
		{"tool_call_error", []string{`{"city":"San Francisco"}`, `{"city":"San Francisco"}`}, "The current weather in San Francisco is sunny with a temperature of 68°F."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			weather := funcTool{name: "get_weather",
				schema: `{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`,
				run: func(_ context.Context, c assistant.Call) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, string(c.Input))
					if tt.name == "tool_call_error" && len(calls) == 1 {
						return "", errors.New("weather service unavailable")
					}
					return "Sunny, 72°F", nil
				}}
			e := newEnv(t, nil, weather)
			recorded, err := anthropictest.Cassette(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			e.srv.Enqueue(recorded...)
			r := e.mustHandle(erin, "what's the weather?")
			if r.Text != tt.answer {
				t.Errorf("reply = %q, want %q", r.Text, tt.answer)
			}
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("get_weather ran with %q, want %q", calls, tt.calls)
			}
			if r.Model != "claude-3-7-sonnet-20250219" {
				t.Errorf("Reply.Model = %q, want the recorded responses' model", r.Model)
			}
			// Every recorded content array is stored as it came.
			h := e.history(erin)
			var stored []string
			for _, m := range h {
				if m.Role == conversation.RoleAssistant {
					stored = append(stored, string(m.Content))
				}
			}
			if len(stored) != len(recorded) {
				t.Fatalf("stored %d assistant messages, want %d", len(stored), len(recorded))
			}
			for i, resp := range recorded {
				var body struct{ Content json.RawMessage }
				if err := json.Unmarshal(resp.Raw, &body); err != nil {
					t.Fatal(err)
				}
				if stored[i] != string(body.Content) {
					t.Errorf("assistant message %d stored as\n%s\nwant the recorded\n%s", i, stored[i], body.Content)
				}
			}
			checkStoredValid(t, e, erin)
			if n := e.srv.Pending(); n != 0 {
				t.Errorf("%d recorded responses left", n)
			}
		})
	}
}

// A 4xx after a tool round does not read as a lost connection: the person
// reads the sentence for what went wrong, and that some of it may be done.
func TestClientErrorAfterToolRound(t *testing.T) {
	var list listTool
	e := newEnv(t, nil, list.tool())
	e.srv.Enqueue(anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"items": []string{"milk"}}}),
		anthropictest.PromptTooLong(210000, 200000))
	r, err := e.handle(erin, "add milk")
	if !errors.Is(err, apology.ErrPromptTooLong) || !errors.Is(err, apology.ErrPartial) {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(r.Text, apology.PromptTooLong) || strings.Contains(r.Text, "connection") {
		t.Errorf("reply = %q, want the prompt-too-long sentence", r.Text)
	}
	if r.Text != assistant.ErrorMessage(err) {
		t.Errorf("reply %q is not ErrorMessage(err) %q", r.Text, assistant.ErrorMessage(err))
	}
	checkStoredValid(t, e, erin)
}
