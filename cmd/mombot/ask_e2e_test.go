package main

// End-to-end tests of mombot ask as a person uses it: the built binary, one
// process per message, against a fake Messages API served by the test
// process, with the conversations and the family's lists in files of a
// temporary folder. They are the six scenarios of the conversation-memory
// spec, and they assert on the messages the fake received, byte for byte,
// not only on the printed replies.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
)

// The family of the end-to-end tests of ask.
const (
	askErin  = "+14155551234"
	askJason = "+14155555678"
)

// askZone is the time zone of the ask processes (TZ), in which the JSON
// store writes and reads its naive last_active times: far from UTC, so a
// time read in the wrong zone shows, and without daylight saving time, so
// no naive time is ambiguous on the day the clocks go back.
const askZone = "Asia/Kolkata"

// TestAskE2E runs the spec's scenarios through mombot ask, built once.
func TestAskE2E(t *testing.T) {
	bin := buildMombot(t)
	t.Run("FollowUp", func(t *testing.T) { testAskFollowUp(t, newAskFixture(t, bin)) })
	t.Run("ToolWorkflow", func(t *testing.T) { testAskToolWorkflow(t, newAskFixture(t, bin)) })
	t.Run("Expiry", func(t *testing.T) { testAskExpiry(t, newAskFixture(t, bin)) })
	t.Run("Restart", func(t *testing.T) { testAskRestart(t, newAskFixture(t, bin)) })
	t.Run("TwoPhones", func(t *testing.T) { testAskTwoPhones(t, newAskFixture(t, bin)) })
	t.Run("SystemSender", func(t *testing.T) { testAskSystemSender(t, newAskFixture(t, bin)) })
	t.Run("Window", func(t *testing.T) { testAskWindow(t, newAskFixture(t, bin)) })
	t.Run("Kinds", func(t *testing.T) { testAskKinds(t, newAskFixture(t, bin)) }) // ask_kinds_e2e_test.go
}

// testAskWindow: the window of history sent is kept in the store, so one
// process per message continues it. The store holds the last 10 turns;
// the 12th message, after the window's first turn was dropped, is sent
// with 3 of them, and the 13th with those and the 12th.
func testAskWindow(t *testing.T, f *askFixture) {
	f.claude.Respond(func(anthropictest.Request) anthropictest.Response { return anthropictest.Text("Noted.") })
	var got []int
	for i := range 13 {
		got = append(got, len(f.askOnce(askErin, fmt.Sprintf("note %d", i))))
	}
	want := []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 7, 9}
	if !slices.Equal(got, want) {
		t.Errorf("messages sent:\n got %v\nwant %v", got, want)
	}
	if n := len(f.stored(askErin)); n != 20 {
		t.Errorf("stored %d messages, want the 10 turns of the cap", n)
	}
}

// testAskFollowUp: a follow-up sees the previous turn, as it was stored.
func testAskFollowUp(t *testing.T, f *askFixture) {
	// "&", "<" and "é" would not survive a re-encoding with HTML escaping
	// or a lossy decode.
	first := anthropictest.Text("Tacos & flan tonight <3")
	second := anthropictest.Text("Corn tortillas, they're gluten-free. Bon appétit!")
	f.claude.Enqueue(first, second)

	reply, reqs := f.ask(askErin, "what's for dinner & dessert?")
	if reply != "Tacos & flan tonight <3" || len(reqs) != 1 {
		t.Fatalf("first message: reply %q after %d requests", reply, len(reqs))
	}
	sent1 := sentMessages(reqs[0])
	if len(sent1) != 1 {
		t.Fatalf("the first message carried %d messages, want 1:\n%s", len(sent1), strings.Join(sent1, "\n"))
	}
	checkUserMessage(t, sent1[0], "Erin", "what's for dinner & dessert?")
	turn1 := append(slices.Clone(sent1), assistantMessage(first))
	equalMessages(t, "stored after the first message", f.stored(askErin), turn1)

	reply, reqs = f.ask(askErin, "what kind of tortillas?")
	if reply != "Corn tortillas, they're gluten-free. Bon appétit!" || len(reqs) != 1 {
		t.Fatalf("follow-up: reply %q after %d requests", reply, len(reqs))
	}
	sent2 := sentMessages(reqs[0])
	if len(sent2) != 3 {
		t.Fatalf("the follow-up carried %d messages, want 3:\n%s", len(sent2), strings.Join(sent2, "\n"))
	}
	equalMessages(t, "history sent with the follow-up", sent2[:2], turn1)
	checkUserMessage(t, sent2[2], "Erin", "what kind of tortillas?")
	equalMessages(t, "stored after the follow-up", f.stored(askErin), append(slices.Clone(sent2), assistantMessage(second)))
}

// testAskToolWorkflow: "find me a chicken dinner" -> "tell me more about
// number 2" -> "add it to the grocery list", with the real list tools, each
// message carrying the earlier tool_use/tool_result pairs.
func testAskToolWorkflow(t *testing.T, f *askFixture) {
	ideas := []string{"Chicken tikka masala", "Lemon chicken traybake with potatoes", "Chicken fajitas"}
	groceries := []string{"chicken thighs", "lemons", "baby potatoes", "rosemary"}

	// Jason keeps the family's dinner ideas; the lists are shared, his
	// conversation is not.
	f.claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_e2e_ideas", Name: "list_add", Input: map[string]any{"list": "dinner ideas", "items": ideas}}),
		anthropictest.Text("Added 3 dinner ideas."),
	)
	if _, reqs := f.ask(askJason, "add chicken tikka masala, lemon chicken traybake with potatoes and chicken fajitas to our dinner ideas"); len(reqs) != 2 {
		t.Fatalf("Jason's message made %d requests, want 2", len(reqs))
	}

	// 1. A search of the dinner ideas, with the list tool.
	find := anthropictest.ToolUse("Let me look at the family's dinner ideas.",
		anthropictest.Call{ID: "toolu_e2e_show", Name: "list_show", Input: map[string]any{"list": "dinner ideas"}})
	found := anthropictest.Text("Three chicken dinners from your ideas:\n1. Chicken tikka masala\n2. Lemon chicken traybake with potatoes\n3. Chicken fajitas")
	f.claude.Enqueue(find, found)
	reply, reqs := f.ask(askErin, "find me a chicken dinner")
	if reply != "Three chicken dinners from your ideas:\n1. Chicken tikka masala\n2. Lemon chicken traybake with potatoes\n3. Chicken fajitas" || len(reqs) != 2 {
		t.Fatalf("find: reply %q after %d requests", reply, len(reqs))
	}
	call, answer := sentMessages(reqs[0]), sentMessages(reqs[1])
	if len(call) != 1 {
		t.Fatalf("Erin's first message carried %d messages, want 1 (none of Jason's)", len(call))
	}
	checkUserMessage(t, call[0], "Erin", "find me a chicken dinner")
	if len(answer) != 3 {
		t.Fatalf("the request after the tool round has %d messages, want 3", len(answer))
	}
	equalMessages(t, "the tool round's request", answer[:2], []string{call[0], assistantMessage(find)})
	results := toolResultsOf(t, answer)
	if r := results["toolu_e2e_show"]; r.IsError || !strings.Contains(r.Content, "2. Lemon chicken traybake with potatoes") {
		t.Errorf("list_show's result = %+v, want the numbered dinner ideas", r)
	}
	turn1 := append(slices.Clone(answer), assistantMessage(found))
	equalMessages(t, "stored after step 1", f.stored(askErin), turn1)

	// 2. "number 2" only means something with step 1's tool round.
	more := anthropictest.Text("Lemon chicken traybake: thighs roasted with lemon, baby potatoes and rosemary, about 45 minutes. You need chicken thighs, lemons, baby potatoes and rosemary.")
	f.claude.Enqueue(more)
	if _, reqs = f.ask(askErin, "tell me more about number 2"); len(reqs) != 1 {
		t.Fatalf("step 2 made %d requests, want 1", len(reqs))
	}
	sent := sentMessages(reqs[0])
	if len(sent) != len(turn1)+1 {
		t.Fatalf("step 2 carried %d messages, want %d", len(sent), len(turn1)+1)
	}
	equalMessages(t, "history sent with step 2", sent[:len(turn1)], turn1)
	checkUserMessage(t, sent[len(turn1)], "Erin", "tell me more about number 2")
	if got := slices.Sorted(maps.Keys(toolResultsOf(t, sent))); !slices.Equal(got, []string{"toolu_e2e_show"}) {
		t.Errorf("step 2 carried the tool rounds %q, want step 1's", got)
	}
	history := append(slices.Clone(sent), assistantMessage(more))
	equalMessages(t, "stored after step 2", f.stored(askErin), history)

	// 3. The grocery list, with the list tool.
	add := anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_e2e_add", Name: "list_add", Input: map[string]any{"list": "grocery", "items": groceries}})
	added := anthropictest.Text("Added chicken thighs, lemons, baby potatoes and rosemary to the grocery list.")
	f.claude.Enqueue(add, added)
	reply, reqs = f.ask(askErin, "add it to the grocery list")
	if reply != "Added chicken thighs, lemons, baby potatoes and rosemary to the grocery list." || len(reqs) != 2 {
		t.Fatalf("add: reply %q after %d requests", reply, len(reqs))
	}
	call, answer = sentMessages(reqs[0]), sentMessages(reqs[1])
	if len(call) != len(history)+1 || len(answer) != len(call)+2 {
		t.Fatalf("step 3 sent %d then %d messages, want %d then %d", len(call), len(answer), len(history)+1, len(history)+3)
	}
	equalMessages(t, "history sent with step 3", call[:len(history)], history)
	checkUserMessage(t, call[len(history)], "Erin", "add it to the grocery list")
	equalMessages(t, "step 3's tool round request", answer[:len(call)+1], append(slices.Clone(call), assistantMessage(add)))
	results = toolResultsOf(t, answer)
	if got := slices.Sorted(maps.Keys(results)); !slices.Equal(got, []string{"toolu_e2e_add", "toolu_e2e_show"}) {
		t.Errorf("step 3 carried the tool rounds %q, want step 1's and its own", got)
	}
	if r := results["toolu_e2e_add"]; r.IsError || !strings.Contains(r.Content, "4. rosemary") {
		t.Errorf("list_add's result = %+v, want the grocery list", r)
	}
	equalMessages(t, "stored after step 3", f.stored(askErin), append(slices.Clone(answer), assistantMessage(added)))

	// The lists file has what the tools did, and who did it.
	got := f.lists()
	for _, c := range []struct {
		list  string
		items []string
		by    string
	}{{"dinner ideas", ideas, "Jason"}, {"grocery", groceries, "Erin"}} {
		var texts []string
		for _, it := range got[c.list] {
			texts = append(texts, it.Text)
			if it.AddedBy != c.by {
				t.Errorf("%s: %q added by %q, want %q", c.list, it.Text, it.AddedBy, c.by)
			}
		}
		if !slices.Equal(texts, c.items) {
			t.Errorf("the %s list holds %q, want %q", c.list, texts, c.items)
		}
	}
}

// testAskExpiry: a conversation inactive for longer than the timeout (30
// minutes, the default) is not sent and is replaced. Its last activity is
// moved back in the file rather than waited for.
func testAskExpiry(t *testing.T, f *askFixture) {
	first, second, third := anthropictest.Text("Tacos."), anthropictest.Text("Corn ones."), anthropictest.Text("Good morning!")
	f.claude.Enqueue(first, second, third)
	turn1 := append(f.askOnce(askErin, "what's for dinner?"), assistantMessage(first))

	// 29 minutes idle: still the same conversation.
	f.setLastActive(askErin, time.Now().Add(-29*time.Minute))
	sent := f.askOnce(askErin, "what kind of tortillas?")
	if len(sent) != 3 {
		t.Fatalf("after 29 minutes the message carried %d messages, want 3", len(sent))
	}
	equalMessages(t, "history after 29 minutes", sent[:2], turn1)

	// 31 minutes idle: expired, so nothing is sent and a new conversation
	// starts in its place.
	f.setLastActive(askErin, time.Now().Add(-31*time.Minute))
	sent = f.askOnce(askErin, "good morning")
	if len(sent) != 1 {
		t.Fatalf("after 31 minutes the message carried %d messages, want 1:\n%s", len(sent), strings.Join(sent, "\n"))
	}
	checkUserMessage(t, sent[0], "Erin", "good morning")
	equalMessages(t, "stored after expiry", f.stored(askErin), append(sent, assistantMessage(third)))
	if at := f.lastActive(askErin); time.Since(at) > time.Minute || time.Since(at) < -time.Minute {
		t.Errorf("last_active is %v after the new message, want about now", at)
	}
}

// testAskRestart: history lives in the file, so a new process, and mombot
// history show, see what an earlier process stored.
func testAskRestart(t *testing.T, f *askFixture) {
	first, second := anthropictest.Text("Pasta & salad."), anthropictest.Text("Penne.")
	f.claude.Enqueue(first, second)
	turn1 := append(f.askOnce(askErin, "what's for dinner?"), assistantMessage(first))

	equalMessages(t, "history show --json after the first process", f.showJSON(askErin), turn1)

	sent := f.askOnce(askErin, "which pasta?")
	if len(sent) != 3 {
		t.Fatalf("the second process sent %d messages, want 3", len(sent))
	}
	equalMessages(t, "history sent by the second process", sent[:2], turn1)
	equalMessages(t, "history show --json after the second process", f.showJSON(askErin), append(sent, assistantMessage(second)))
}

// testAskTwoPhones: two people write at the same moment, three times; each
// request carries its sender's turns only.
func testAskTwoPhones(t *testing.T, f *askFixture) {
	// The answers depend on the message only, since the two processes'
	// requests arrive in any order.
	f.claude.Respond(func(r anthropictest.Request) anthropictest.Response {
		var m struct{ Content string }
		if n := len(r.Params.Messages); n > 0 {
			_ = json.Unmarshal(r.Params.Messages[n-1], &m)
		}
		_, text, _ := strings.Cut(m.Content, "]: ")
		return anthropictest.Text("noted: " + text)
	})
	people := []struct{ phone, name string }{{askErin, "Erin"}, {askJason, "Jason"}}
	const rounds = 3
	for i := 1; i <= rounds; i++ {
		errs := make([]error, len(people))
		var wg sync.WaitGroup
		for j, p := range people {
			wg.Go(func() {
				var reply string
				reply, _, errs[j] = f.askErr(p.phone, fmt.Sprintf("%s's message %d", p.name, i))
				if want := fmt.Sprintf("noted: %s's message %d", p.name, i); errs[j] == nil && reply != want {
					errs[j] = fmt.Errorf("reply %q, want %q", reply, want)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}

	for _, p := range people {
		other := "Jason"
		if p.name == "Jason" {
			other = "Erin"
		}
		var prev []string
		n := 0
		for _, r := range f.claude.Requests() {
			sent := sentMessages(r)
			if !strings.Contains(sent[len(sent)-1], "[From "+p.name+"]") {
				continue
			}
			n++
			if len(sent) != 2*n-1 {
				t.Fatalf("%s's message %d carried %d messages, want %d", p.name, n, len(sent), 2*n-1)
			}
			equalMessages(t, fmt.Sprintf("history sent with %s's message %d", p.name, n), sent[:len(sent)-1], prev)
			checkUserMessage(t, sent[len(sent)-1], p.name, fmt.Sprintf("%s's message %d", p.name, n))
			for k, m := range sent {
				if strings.Contains(m, other) {
					t.Errorf("%s's message %d carried %s's words in message %d: %s", p.name, n, other, k, m)
				}
			}
			prev = append(slices.Clone(sent), assistantMessage(anthropictest.Text(fmt.Sprintf("noted: %s's message %d", p.name, n))))
		}
		if n != rounds {
			t.Errorf("%s's messages made %d requests, want %d", p.name, n, rounds)
		}
		equalMessages(t, p.name+"'s stored conversation", f.stored(p.phone), prev)
	}
}

// testAskSystemSender: messages of the sender "system" get no history and
// are not stored: the file is not even rewritten.
func testAskSystemSender(t *testing.T, f *askFixture) {
	f.claude.Enqueue(anthropictest.Text("Tacos."), anthropictest.Text("Digest sent."), anthropictest.Text("Digest sent again."))
	f.ask(askErin, "what's for dinner?")
	before, err := os.ReadFile(f.store)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"daily digest: 4 items on the grocery list", "daily digest: 4 items on the grocery list, again"} {
		reply, reqs := f.ask("system", text)
		if len(reqs) != 1 || reply == "" {
			t.Fatalf("system message %d: reply %q after %d requests", i+1, reply, len(reqs))
		}
		if sent := sentMessages(reqs[0]); len(sent) != 1 || !strings.HasSuffix(sent[0], "] [From system]: "+text+`"}`) {
			t.Errorf("system message %d sent %d messages, want only itself:\n%s", i+1, len(sent), strings.Join(sent, "\n"))
		}
	}
	after, err := os.ReadFile(f.store)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("system messages changed the conversations file:\nbefore %s\nafter  %s", before, after)
	}
	if _, ok := f.conversations()["system"]; ok {
		t.Errorf("the conversations file has a \"system\" key:\n%s", after)
	}
	if _, stderr, err := f.mombot("history", "show", "system"); err == nil || !strings.Contains(stderr, "no conversation stored") {
		t.Errorf("history show system: %v, %q; want no conversation", err, stderr)
	}
}

// askFixture is the world of one scenario: a fake Messages API, and a
// folder with the family's configuration, the conversations and the lists.
type askFixture struct {
	t      *testing.T
	bin    string
	claude *anthropictest.Server
	dir    string
	store  string // the conversations file
	zone   *time.Location
}

func newAskFixture(t *testing.T, bin string) *askFixture {
	t.Helper()
	zone, err := time.LoadLocation(askZone)
	if err != nil {
		t.Fatal(err)
	}
	f := &askFixture{t: t, bin: bin, claude: anthropictest.NewServer(t), dir: t.TempDir(), zone: zone}
	f.claude.Route(assistant.DefaultSummaryModel, fakeSummarizer)
	f.store = filepath.Join(f.dir, "data", "conversations.json")
	config := `{
  "timezone": "America/Los_Angeles",
  "family": {
    "+1 (415) 555-1234": {"name": "Erin"},
    "+14155555678": {"name": "Jason", "timezone": "America/New_York"}
  }
}`
	if err := os.WriteFile(filepath.Join(f.dir, "mombot.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range f.claude.Rejected() {
			t.Errorf("the fake Messages API rejected a request: %s", r)
		}
		if n := f.claude.Pending(); n > 0 {
			t.Errorf("%d scripted responses were not asked for", n)
		}
	})
	return f
}

// env is the processes' whole environment: nothing is inherited but PATH.
func (f *askFixture) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + f.dir,
		"TZ=" + askZone,
		"ANTHROPIC_API_KEY=" + anthropictest.APIKey,
		"ANTHROPIC_BASE_URL=" + f.claude.URL,
		"MOMBOT_CONFIG=" + filepath.Join(f.dir, "mombot.json"),
		"MOMBOT_STORE=" + f.store,
	}
}

// mombot runs the binary in the fixture's folder and returns its output.
func (f *askFixture) mombot(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.dir
	cmd.Env = f.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if strings.Contains(out.String()+errOut.String(), anthropictest.APIKey) {
		err = errors.Join(err, fmt.Errorf("mombot %s printed the API key", strings.Join(args, " ")))
	}
	return out.String(), errOut.String(), err
}

// askErr runs mombot ask --from phone text in its own process and returns
// the reply it printed and the requests it made. Messages from one phone
// must not overlap, or the requests are mixed up.
func (f *askFixture) askErr(phone, text string) (string, []anthropictest.Request, error) {
	before := len(f.claude.Requests())
	stdout, stderr, err := f.mombot("ask", "--from", phone, text)
	if err != nil {
		return "", nil, fmt.Errorf("mombot ask --from %s %q: %w\n%s", phone, text, err, stderr)
	}
	var reqs []anthropictest.Request
	for _, r := range f.claude.Requests()[before:] {
		if r.Params.Model == assistant.DefaultSummaryModel {
			continue // the summarizer's, folding turns first (summaries)
		}
		if sent := sentMessages(r); len(sent) > 0 && strings.Contains(sent[0], f.from(phone)) {
			reqs = append(reqs, r)
		}
	}
	reply, ok := strings.CutSuffix(stdout, "\n")
	if !ok {
		return "", nil, fmt.Errorf("mombot ask printed %q, want one reply and a newline", stdout)
	}
	return reply, reqs, nil
}

// ask is askErr that fails the test on an error.
func (f *askFixture) ask(phone, text string) (string, []anthropictest.Request) {
	f.t.Helper()
	reply, reqs, err := f.askErr(phone, text)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply, reqs
}

// askOnce is ask for a message answered without tools: it returns the
// messages of its one request.
func (f *askFixture) askOnce(phone, text string) []string {
	f.t.Helper()
	_, reqs := f.ask(phone, text)
	if len(reqs) != 1 {
		f.t.Fatalf("mombot ask --from %s %q made %d requests, want 1", phone, text, len(reqs))
	}
	return sentMessages(reqs[0])
}

// from returns what the messages of phone hold: "[From Erin]", or, for
// senders outside the family, "[From " (anyone's).
func (f *askFixture) from(phone string) string {
	switch phone {
	case askErin:
		return "[From Erin]"
	case askJason:
		return "[From Jason]"
	}
	return "[From "
}

// conversations returns the conversations file's members.
func (f *askFixture) conversations() map[string]json.RawMessage {
	f.t.Helper()
	data, err := os.ReadFile(f.store)
	if err != nil {
		f.t.Fatal(err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		f.t.Fatalf("conversations file: %v\n%s", err, data)
	}
	return file
}

// stored returns phone's messages in the conversations file, every turn
// flattened, each compacted but otherwise as it is in the file.
func (f *askFixture) stored(phone string) []string {
	f.t.Helper()
	var c struct {
		Turns []struct{ Messages []json.RawMessage }
	}
	if err := json.Unmarshal(f.conversations()[phone], &c); err != nil {
		f.t.Fatalf("conversation of %s: %v", phone, err)
	}
	var out []string
	for _, turn := range c.Turns {
		out = append(out, compactAll(f.t, turn.Messages)...)
	}
	return out
}

// lastActive returns phone's last activity as the file records it.
func (f *askFixture) lastActive(phone string) time.Time {
	f.t.Helper()
	var c struct {
		LastActive string `json:"last_active"`
	}
	if err := json.Unmarshal(f.conversations()[phone], &c); err != nil {
		f.t.Fatal(err)
	}
	at, err := time.ParseInLocation("2006-01-02T15:04:05.999999", c.LastActive, f.zone)
	if err != nil {
		f.t.Fatalf("last_active: %v", err)
	}
	return at
}

// setLastActive rewrites phone's last_active in the file as the original
// writes it, a naive local time, here at.
func (f *askFixture) setLastActive(phone string, at time.Time) {
	f.t.Helper()
	file := f.conversations()
	var c map[string]json.RawMessage
	if err := json.Unmarshal(file[phone], &c); err != nil {
		f.t.Fatal(err)
	}
	c["last_active"], _ = json.Marshal(at.In(f.zone).Format("2006-01-02T15:04:05.000000"))
	file[phone], _ = json.Marshal(c)
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.store, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// showJSON returns what mombot history show --json prints for phone, each
// message compacted.
func (f *askFixture) showJSON(phone string) []string {
	f.t.Helper()
	stdout, stderr, err := f.mombot("history", "show", "--json", phone)
	if err != nil {
		f.t.Fatalf("history show --json: %v\n%s", err, stderr)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &msgs); err != nil {
		f.t.Fatalf("history show --json printed %q: %v", stdout, err)
	}
	return compactAll(f.t, msgs)
}

// lists returns the family's lists as mombot lists --json prints them.
func (f *askFixture) lists() map[string][]lists.Item {
	f.t.Helper()
	stdout, stderr, err := f.mombot("lists", "--json")
	if err != nil {
		f.t.Fatalf("lists --json: %v\n%s", err, stderr)
	}
	var file struct{ Lists map[string][]lists.Item }
	if err := json.Unmarshal([]byte(stdout), &file); err != nil {
		f.t.Fatalf("lists --json: %v\n%s", err, stdout)
	}
	return file.Lists
}

// sentMessages returns the messages of a request exactly as they were sent.
func sentMessages(r anthropictest.Request) []string {
	out := make([]string, len(r.Params.Messages))
	for i, m := range r.Params.Messages {
		out[i] = breakpoint.ReplaceAllString(string(m), "")
	}
	return out
}

// breakpoint matches the cache_control a request puts on a block: where
// the breakpoints go depends on the prompt's length and is the assistant
// package's to test; what is compared here is the stored content.
var breakpoint = regexp.MustCompile(`,"cache_control":\{"type":"ephemeral"(,"ttl":"(5m|1h)")?\}`)

// assistantMessage returns the assistant message of a scripted response as
// it is sent back and stored: its content blocks unchanged.
func assistantMessage(r anthropictest.Response) string {
	blocks := make([]string, len(r.Content))
	for i, b := range r.Content {
		blocks[i] = string(b)
	}
	return `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
}

// checkUserMessage checks that msg is the person's message: a string
// content of the local date and time, then "[From NAME]: text".
func checkUserMessage(t *testing.T, msg, name, text string) {
	t.Helper()
	var m struct {
		Role    string
		Content string
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil || m.Role != "user" {
		t.Errorf("not a user message with text content: %s (%v)", msg, err)
		return
	}
	want := "] [From " + name + "]: " + text
	if !strings.HasPrefix(m.Content, "[") || !strings.HasSuffix(m.Content, want) || !strings.HasSuffix(msg, want+`"}`) {
		t.Errorf("user message %s\nwant \"[date time%s\", unescaped", msg, want)
	}
}

// equalMessages checks got against want, message by message, byte for byte.
func equalMessages(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "\nmessage %d:\n got  %s\n want %s", i, g, w)
		}
	}
	t.Errorf("%s: %d messages, want %d%s", what, len(got), len(want), b.String())
}

// toolResult is a tool_result block.
type toolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// toolResultsOf returns the tool_result blocks of msgs by tool_use_id,
// checking that each answers a tool_use of the message just before.
func toolResultsOf(t *testing.T, msgs []string) map[string]toolResult {
	t.Helper()
	type block struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	out := map[string]toolResult{}
	calls := map[string]bool{} // the tool_use ids of the previous message
	for i, raw := range msgs {
		var m struct{ Content json.RawMessage }
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var blocks []block
		_ = json.Unmarshal(m.Content, &blocks) // a string content has none
		next := map[string]bool{}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				next[b.ID] = true
			case "tool_result":
				if !calls[b.ToolUseID] {
					t.Errorf("message %d answers %s, which message %d did not call", i, b.ToolUseID, i-1)
				}
				var text string
				if err := json.Unmarshal(b.Content, &text); err != nil {
					t.Errorf("message %d: the result of %s is not text: %s", i, b.ToolUseID, b.Content)
				}
				out[b.ToolUseID] = toolResult{Content: text, IsError: b.IsError}
			}
		}
		calls = next
	}
	return out
}

func compactAll(t *testing.T, msgs []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var b bytes.Buffer
		if err := json.Compact(&b, m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		out[i] = b.String()
	}
	return out
}
