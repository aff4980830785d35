package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/usage"
)

// The long-term memory week (issue 23, item 7): a scripted family week
// replayed against anthropictest with a scripted model. Two parents write
// about 15 messages a day each, in three sessions a day separated by hours;
// notes are written, corrected and forgotten through the remember and
// forget tools; a question on the sixth day has its answer only in the
// asker's running summary. The first four days run as serve does (a sweep
// folds expired conversations), the last three as mombot ask does (no
// sweep: the first message of a session folds first). The same week runs
// again without long memory, for the cost ratio.

// The texts the week checks for.
const (
	weekReplaced  = "No fish for Jason"
	weekForgotten = "tulip-42"
	weekPrivate   = "Surprise party for Jason on May 3"
	weekDecision  = "Sunday dinner is at grandma's at 5pm"
	erinMarker    = "erin-msg-" // in every plain message of Erin's
)

// weekMessage is one message of the week.
type weekMessage struct {
	at   time.Time
	from string
	text string
}

// weekScript returns the week's messages in order.
func weekScript(start time.Time) []weekMessage {
	special := map[string]string{
		"0/erin/0/1":  "remember family: Emma is allergic to peanuts",    // #1
		"0/jason/1/0": "remember family: " + weekReplaced,                // #2
		"0/erin/2/0":  "remember private: " + weekPrivate,                // #3
		"1/jason/0/2": "We decided: " + weekDecision + ", bring a salad", // only in Jason's summary
		"2/jason/1/0": "correct 2: No pork for Jason",                    // #4 replaces #2
		"3/erin/0/0":  "remember family: the wifi password is " + weekForgotten,
		"3/erin/2/0":  "forget 5",
		"5/jason/1/0": "what did we decide for sunday dinner?",
	}
	var out []weekMessage
	for day := range 7 {
		for s, hour := range []int{8, 13, 19} {
			for m := range 5 {
				for i, p := range []struct{ phone, name string }{{erin, "erin"}, {jason, "jason"}} {
					at := start.AddDate(0, 0, day).Add(time.Duration(hour)*time.Hour + time.Duration(m*4+i*2)*time.Minute)
					text := special[fmt.Sprintf("%d/%s/%d/%d", day, p.name, s, m)]
					if text == "" {
						text = fmt.Sprintf("%s%d-%d-%d: can you check the plan for the kids' afternoon and the groceries we need", p.name+"-msg-", day, s, m)
					}
					out = append(out, weekMessage{at: at, from: p.phone, text: text})
				}
			}
		}
	}
	return out
}

var (
	rememberRe = regexp.MustCompile(`remember (family|private): (.+)$`)
	correctRe  = regexp.MustCompile(`correct (\d+): (.+)$`)
	forgetRe   = regexp.MustCompile(`forget (\d+)$`)
)

// lastUserText returns the text of a request's last message and whether
// it is a tool result.
func lastUserText(t testing.TB, r anthropictest.Request) (string, bool) {
	msgs := sent(t, r)
	last := msgs[len(msgs)-1]
	blocks, _ := last.Blocks()
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "tool_result" {
			return "", true
		}
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String(), false
}

// weekModel is the scripted model of the week: it calls the note tools
// when asked to and they are offered, answers a question from the memory
// it is shown, and otherwise acknowledges. As the summarizer it keeps the
// people's plain messages, never their note commands, at most 5 lines (the
// prompt's 100 words).
func weekModel(t testing.TB) func(r anthropictest.Request) anthropictest.Response {
	return func(r anthropictest.Request) anthropictest.Response {
		if r.Params.Model == assistant.DefaultSummaryModel {
			var in []struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal(mustJSON(r.Params.Messages), &in); err != nil || len(in) == 0 || len(in[0].Content) == 0 {
				t.Errorf("summarizer request: %v", err)
				return anthropictest.Text("-")
			}
			text := in[0].Content[0].Text
			prev, turns, _ := strings.Cut(text, "\nTurns to fold in, oldest first:\n")
			_, prev, _ = strings.Cut(prev, "Summary so far:\n")
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(prev), "\n") {
				if strings.HasPrefix(l, "- ") {
					lines = append(lines, l)
				}
			}
			for _, l := range strings.Split(turns, "\n") {
				said, ok := strings.CutPrefix(l, "Person: ")
				if !ok || rememberRe.MatchString(said) || correctRe.MatchString(said) || forgetRe.MatchString(said) || strings.Contains(said, "[forgotten]") {
					continue
				}
				if _, s, ok := strings.Cut(said, "]: "); ok {
					said = s
				}
				lines = append(lines, "- "+said)
			}
			// The decisions are what a summary keeps: a line with one
			// stays, the others go first.
			for len(lines) > 5 {
				i := 0
				for i < len(lines)-1 && strings.Contains(lines[i], "decided") {
					i++
				}
				lines = append(lines[:i], lines[i+1:]...)
			}
			return anthropictest.Text(strings.Join(lines, "\n"))
		}
		text, isResult := lastUserText(t, r)
		if isResult {
			return anthropictest.Text("Done.")
		}
		tools := string(r.Params.Tools)
		hasNotes := strings.Contains(tools, `"name":"remember"`)
		switch m := rememberRe.FindStringSubmatch(text); {
		case m != nil && hasNotes:
			return anthropictest.ToolUse("", anthropictest.Call{Name: "remember", Input: map[string]any{"text": m[2], "scope": m[1]}})
		}
		if m := correctRe.FindStringSubmatch(text); m != nil && hasNotes {
			id, _ := strconv.Atoi(m[1])
			return anthropictest.ToolUse("", anthropictest.Call{Name: "remember", Input: map[string]any{"text": m[2], "scope": "family", "replaces": id}})
		}
		if m := forgetRe.FindStringSubmatch(text); m != nil && hasNotes {
			id, _ := strconv.Atoi(m[1])
			return anthropictest.ToolUse("", anthropictest.Call{Name: "forget", Input: map[string]any{"id": id}})
		}
		if strings.Contains(text, "what did we decide") {
			for _, l := range strings.Split(string(r.Params.System), `\n`) {
				if strings.Contains(l, "decided") {
					return anthropictest.Text("From what you told me: " + strings.TrimPrefix(l, "- "))
				}
			}
			return anthropictest.Text("I don't know.")
		}
		return anthropictest.Text("Sure, noted for today.")
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// weekResult is what one run of the week measured.
type weekResult struct {
	requests     int
	maxMemTokens int
	usage        conversation.Usage // every call, the summarizer's too
	summaryCalls int
	answer       string
	// cost is the week's cost at the main model's list prices, the
	// summarizer's calls at Haiku's; summaryCost is the summarizer's
	// share of it.
	cost, summaryCost float64
	summaryUsage      conversation.Usage
	// foldedFirst counts the summaries a message made at its session's
	// start, where no sweep had run.
	foldedFirst int
}

// cacheShare is the share of the prompt tokens read from the cache.
func (w weekResult) cacheShare() float64 {
	return float64(w.usage.CacheReadTokens) / float64(w.usage.PromptTokens())
}

// runWeek replays the week, with long memory (notes and summaries) or
// without, and checks what the week promises when with is set.
func runWeek(t testing.TB, with bool) weekResult {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	srv := anthropictest.NewServer(t)
	srv.SetNow(clock.Now)
	srv.Respond(weekModel(t))
	dir := t.TempDir()
	store, err := storeurl.Open(ctx, "file:"+filepath.Join(dir, "conversations.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	members := map[string]bool{erin: true, jason: true}
	mo := &conversation.Options{Now: clock.Now}
	o := &assistant.Options{Now: clock.Now, Logger: slog.New(slog.DiscardHandler), Family: map[string]assistant.Person{
		erin: {Name: "Erin", Location: time.UTC}, jason: {Name: "Jason", Location: time.UTC}}}
	if with {
		mo.Summarize = func(p string) bool { return members[p] }
		o.Notes = &assistant.NotesOptions{}
		o.Summaries = &assistant.SummarizerOptions{}
	}
	mem, err := conversation.New(store, mo)
	if err != nil {
		t.Fatal(err)
	}
	// The tools a family has, as mombot ask and serve set them up.
	shared := lists.New(mem, clock.Now)
	if o.Tools, err = assistant.NewRegistry(lists.Tools(shared)...); err != nil {
		t.Fatal(err)
	}
	a, err := assistant.New(srv.Client(), mem, o)
	if err != nil {
		t.Fatal(err)
	}
	var res weekResult
	forgottenAt, replacedSession := -1, -1
	// owner[i] is whose message request i was made for, and when[i] the
	// day of the week it was made on.
	var owner []string
	var when []int
	lastSweep := time.Time{}
	for i, m := range weekScript(clock.Now()) {
		day := int(m.at.Sub(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)) / (24 * time.Hour))
		if with && day < 4 && m.at.Sub(lastSweep) > 30*time.Minute+10*time.Minute {
			// serve: a sweep ran in the pause.
			clock.Advance(m.at.Sub(clock.Now()) - time.Minute)
			if _, err := mem.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{erin, jason} {
				n := len(srv.Requests())
				if _, err := mem.FoldSummary(ctx, p, a.Summarizer()); err != nil {
					t.Fatal(err)
				}
				for range len(srv.Requests()) - n {
					owner, when = append(owner, p), append(when, day)
				}
			}
			lastSweep = clock.Now()
		}
		clock.Advance(m.at.Sub(clock.Now()))
		n := len(srv.Requests())
		reply, err := a.Handle(ctx, assistant.Inbound{From: m.from, Text: m.text, ID: fmt.Sprintf("wamid.%d", i)})
		if err != nil {
			t.Fatalf("message %d (%q): %v", i, m.text, err)
		}
		for _, r := range srv.Requests()[n:] {
			owner, when = append(owner, m.from), append(when, day)
			if r.Params.Model == assistant.DefaultSummaryModel {
				res.foldedFirst++ // by the message, before its answer
			}
		}
		if strings.HasPrefix(m.text, "forget ") {
			forgottenAt = len(srv.Requests())
		}
		if strings.HasPrefix(m.text, "correct ") {
			replacedSession = day
		}
		if strings.HasPrefix(m.text, "what did we decide") {
			res.answer = reply.Text
		}
	}
	reqs := srv.Requests()
	if len(owner) != len(reqs) {
		t.Fatalf("%d requests, %d attributed", len(reqs), len(owner))
	}
	res.requests = len(reqs)
	for i, r := range reqs {
		if r.Usage == nil {
			t.Fatalf("request %d failed: %s", i, r.Rejection)
		}
		u := conversation.Usage{Tokens: conversation.Tokens{Calls: 1, InputTokens: int64(r.Usage.InputTokens), CacheWrite5mTokens: int64(r.Usage.CacheCreation.Ephemeral5mInputTokens),
			CacheWrite1hTokens: int64(r.Usage.CacheCreation.Ephemeral1hInputTokens), CacheReadTokens: int64(r.Usage.CacheReadInputTokens), OutputTokens: int64(r.Usage.OutputTokens)}}
		res.usage = res.usage.Add(u)
		body := string(r.Body)
		summarizer := r.Params.Model == assistant.DefaultSummaryModel
		if summarizer {
			res.summaryCalls++
			res.summaryCost += usage.HaikuPrices.Cost(u)
			res.summaryUsage = res.summaryUsage.Add(u)
		} else if mb := memoryText(t, r); mb != "" {
			res.maxMemTokens = max(res.maxMemTokens, conversation.MemoryTokens(mb))
		}
		if !with {
			continue
		}
		if forgottenAt >= 0 && i >= forgottenAt && strings.Contains(body, weekForgotten) {
			t.Errorf("request %d, after the forget, holds the forgotten text", i)
		}
		if replacedSession >= 0 && when[i] > replacedSession && strings.Contains(body, weekReplaced) {
			t.Errorf("request %d, a day after the correction, holds the replaced note's text", i)
		}
		if owner[i] == jason && (strings.Contains(body, weekPrivate) || strings.Contains(body, erinMarker)) {
			t.Errorf("request %d, for Jason, holds Erin's private note or summary: %.300s", i, body)
		}
	}
	res.cost = usage.DefaultPrices.Cost(res.usage) - usage.DefaultPrices.Cost(res.summaryUsage) + res.summaryCost
	if !with {
		return res
	}
	// The usage ledger, priced as mombot usage prices it, costs the same.
	days, err := mem.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var ledger conversation.Usage
	for _, d := range days {
		ledger = ledger.Add(d.Usage)
	}
	if got := (usage.Pricing{Main: usage.DefaultPrices, Summary: usage.HaikuPrices}).Cost(ledger); math.Abs(got-res.cost) > 1e-9 {
		t.Errorf("the ledger prices the week at $%.6f, the requests at $%.6f", got, res.cost)
	}
	// The notes the family has at the end of the week.
	fam := conversation.Family{ID: conversation.DefaultFamilyID, Claim: true, Members: map[string]string{erin: "Erin", jason: "Jason"}}
	for _, c := range []struct{ phone, want string }{
		{erin, "#1 family Emma is allergic to peanuts; #3 private " + weekPrivate + "; #4 family No pork for Jason"},
		{jason, "#1 family Emma is allergic to peanuts; #4 family No pork for Jason"},
	} {
		notes, err := mem.Notes(ctx, fam, c.phone)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range notes {
			got = append(got, fmt.Sprintf("#%d %s %s", n.ID, n.Scope, n.Text))
		}
		if g := strings.Join(got, "; "); g != c.want {
			t.Errorf("notes of %s at the end of the week:\n got %s\nwant %s", c.phone, g, c.want)
		}
	}
	if res.foldedFirst == 0 {
		t.Error("no message of the days without a sweep folded its turns first")
	}
	if !strings.Contains(res.answer, weekDecision) {
		t.Errorf("the question answered only by Jason's summary got %q", res.answer)
	}
	// No stored byte holds the forgotten text.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), weekForgotten) {
			t.Errorf("%s holds the forgotten text", filepath.Base(f))
		}
	}
	for _, p := range []string{erin, jason} {
		s, _ := mem.LoadSummary(ctx, p)
		if strings.Contains(s.Text, weekReplaced) || strings.Contains(s.Text, weekForgotten) {
			t.Errorf("the summary of %s holds a gone note: %q", p, s.Text)
		}
	}
	return res
}

// memoryText returns the text of a request's memory block, "" for none.
func memoryText(t testing.TB, r anthropictest.Request) string {
	var blocks []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(r.Params.System, &blocks); err != nil || len(blocks) < 2 {
		return ""
	}
	return blocks[1].Text
}

// TestLongTermMemoryWeek replays the week with long memory and checks its
// promises: the notes expected, no replaced or forgotten text where it
// must not be, nothing private across people, the question answered from
// the summary; and the figures of docs/benchmarks.md: at most 1,500
// tokens of memory a request, at least 80% of the prompt read from the
// cache, at most 1.15x the cost of the week without long memory.
func TestLongTermMemoryWeek(t *testing.T) {
	with := runWeek(t, true)
	without := runWeek(t, false)
	ratio := with.cost / without.cost
	t.Logf("with long memory: %d requests (%d summarizer), memory at most %d tokens, cache share %.1f%%, $%.4f",
		with.requests, with.summaryCalls, with.maxMemTokens, 100*with.cacheShare(), with.cost)
	t.Logf("summarizer usage %+v", with.summaryUsage)
	t.Logf("summarizer: $%.4f", with.summaryCost)
	t.Logf("without: %d requests, cache share %.1f%%, $%.4f; cost ratio %.3f",
		without.requests, 100*without.cacheShare(), without.cost, ratio)
	if with.maxMemTokens > conversation.MaxMemoryTokens {
		t.Errorf("a request showed %d tokens of memory, over %d", with.maxMemTokens, conversation.MaxMemoryTokens)
	}
	if with.summaryCalls == 0 {
		t.Error("no summary was made in the week")
	}
	if s := with.cacheShare(); s < 0.80 {
		t.Errorf("cache share %.1f%%, want at least 80%%", 100*s)
	}
	if ratio > 1.15 {
		t.Errorf("the week costs %.3fx the week without long memory, want at most 1.15x", ratio)
	}
}
