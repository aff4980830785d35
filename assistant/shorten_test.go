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

// storedBytes returns the bytes of a stored conversation's turns as JSON.
func storedBytes(t testing.TB, turns []conversation.Turn) int {
	t.Helper()
	b, err := json.Marshal(turns)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// One message whose 25 tool rounds each brought back 20 KB (the finding:
// a 3.4 MB stored turn, and a next request of 3.4 MB) is stored whole, but
// the person's next requests carry it shortened: under 200 KB, every call
// still answered, and the same bytes each time, so that the prompt cache
// serves it.
func TestOversizedTurnSentShortened(t *testing.T) {
	result := strings.Repeat("Lemon chicken traybake with potatoes. ", 540) // 20 KB
	chatty := funcTool{name: "recipes", run: func(context.Context, assistant.Call) (string, error) { return result, nil }}
	e := newEnv(t, nil, chatty)
	query := strings.Repeat("chicken ", 500) // 4 KB of input
	for range 25 {
		e.srv.Enqueue(anthropictest.ToolUse("Looking.", anthropictest.Call{Name: "recipes", Input: map[string]any{"query": query}}))
	}
	e.srv.Enqueue(anthropictest.Text("I found 25 pages of chicken recipes; the traybake comes up most."))
	if r := e.mustHandle(erin, "find every chicken recipe you can"); r.ToolRounds != 25 {
		t.Fatalf("%d tool rounds, want 25", r.ToolRounds)
	}
	turns := e.turns(erin)
	if n := storedBytes(t, turns); n < 500_000 {
		t.Fatalf("the stored turn is %d bytes; the test needs one over 500 KB", n)
	}
	calls := len(e.srv.Requests())

	var sentTurn [][]conversation.Message // the first turn as each later request sent it
	for i, text := range []string{"which one is quickest?", "and the cheapest?", "thanks"} {
		e.clock.Advance(time.Minute)
		e.srv.Enqueue(anthropictest.Text("The traybake."))
		e.mustHandle(erin, text)
		r := e.lastRequest()
		if len(r.Body) >= 200_000 {
			t.Errorf("request %d after the large turn is %d bytes, want under 200,000", i+1, len(r.Body))
		}
		t.Logf("request %d after the large turn: %d bytes", i+1, len(r.Body))
		msgs := sent(t, r)
		// The turn keeps its shape: the question, 25 calls and their
		// results, the answer; then the later turns and the new message.
		if len(msgs) != 52+2*i+1 {
			t.Fatalf("request %d has %d messages, want %d", i+1, len(msgs), 52+2*i+1)
		}
		sentTurn = append(sentTurn, msgs[:52])
		if !strings.Contains(string(msgs[2].Content), "[shortened: ") {
			t.Errorf("the first tool result was sent whole: %.200s", msgs[2].Content)
		}
		if got := msgs[51].Text(); got != "I found 25 pages of chicken recipes; the traybake comes up most." {
			t.Errorf("the answer was sent as %q", got)
		}
	}
	for i := 1; i < len(sentTurn); i++ {
		for j := range sentTurn[i] {
			if !sentTurn[i][j].Equal(sentTurn[0][j]) {
				t.Fatalf("message %d of the shortened turn changed between requests:\n%s\n%s", j, sentTurn[0][j].Content, sentTurn[i][j].Content)
			}
		}
	}
	// The prompt cache serves the shortened turn: the third request reads
	// all that the second one sent.
	reqs := e.srv.Requests()
	second, third := reqs[calls+1], reqs[calls+2]
	prompt := second.Usage.InputTokens + second.Usage.CacheCreationInputTokens + second.Usage.CacheReadInputTokens
	if third.Usage.CacheReadInputTokens < prompt {
		t.Errorf("the third request read %d tokens from the cache, want at least the second's %d", third.Usage.CacheReadInputTokens, prompt)
	}
	// The store keeps the turn as it was.
	if got := e.turns(erin)[0]; !got.Messages[2].Equal(turns[0].Messages[2]) {
		t.Errorf("the stored turn was changed")
	}
}

// A turn too large even with every block cut to the least (here 150
// rounds of small calls, more than the turn's share holds) is sent as the
// person's words and a note of what it did, with its answer.
func TestOversizedTurnSummarized(t *testing.T) {
	e := newEnv(t, &assistant.Options{MaxToolIterations: 200}, echoTool("lookup"))
	for range 150 {
		e.srv.Enqueue(anthropictest.ToolUse("", anthropictest.Call{Name: "lookup", Input: map[string]any{"query": strings.Repeat("q", 200)}}))
	}
	e.srv.Enqueue(anthropictest.Text("All looked up."))
	e.mustHandle(erin, "look it all up")
	e.clock.Advance(time.Minute)
	e.srv.Enqueue(anthropictest.Text("ok"))
	e.mustHandle(erin, "what did you find?")
	msgs := sent(t, e.lastRequest())
	if len(msgs) != 3 {
		t.Fatalf("the request has %d messages, want 3: the summarized turn and the new message", len(msgs))
	}
	if got := msgs[0].Text(); !strings.HasSuffix(got, "[From Erin]: look it all up") {
		t.Errorf("the person's words were sent as %q", got)
	}
	note := msgs[1].Text()
	for _, want := range []string{"[Shortened: this exchange was ", "too long to send again; the tools called were lookup ×150.]", "\nAll looked up."} {
		if !strings.Contains(note, want) {
			t.Errorf("the note %q does not hold %q", note, want)
		}
	}
	if n := len(e.lastRequest().Body); n >= 200_000 {
		t.Errorf("the request is %d bytes", n)
	}
}

// A tool input over MaxToolInput is not run: the model is told to split
// it, and the call is kept with the input {}, so that neither the rest of
// the message nor the stored turn carries it.
func TestToolInputBounded(t *testing.T) {
	ran := 0
	tool := funcTool{name: "notes", run: func(context.Context, assistant.Call) (string, error) { ran++; return "saved", nil }}
	e := newEnv(t, nil, tool)
	huge := strings.Repeat("n", assistant.MaxToolInput)
	e.srv.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_huge", Name: "notes", Input: map[string]any{"query": huge}}),
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_small", Name: "notes", Input: map[string]any{"query": "milk"}}),
		anthropictest.Text("Saved."),
	)
	e.mustHandle(erin, "save this")
	if ran != 1 {
		t.Errorf("the tool ran %d times, want 1 (the small call)", ran)
	}
	reqs := e.srv.Requests()
	msgs := sent(t, reqs[1])
	if got := string(msgs[1].Content); got != `[{"id":"toolu_huge","input":{},"name":"notes","type":"tool_use"}]` {
		t.Errorf("the oversized call was sent back as %s", got)
	}
	res := toolResults(t, msgs[2])
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "over the limit of 16384 bytes for one tool call. Split it into smaller calls.") {
		t.Errorf("the result was %+v", res)
	}
	for _, m := range e.history(erin) {
		if bytes.Contains(m.Content, []byte(huge[:100])) {
			t.Fatalf("the stored turn holds the oversized input")
		}
	}
}
