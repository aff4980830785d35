package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/mombot/mombot/conversation"
)

// Running summaries (docs/summaries.md). A [Summarizer] folds the turns
// that left a person's conversation into their running summary with a
// cheaper model; [conversation.Memory.FoldSummary] calls it outside any
// write, from serve's sweep or at the start of the person's next session.

// DefaultSummaryModel is the model that writes summaries when
// [SummarizerOptions.Model] is empty: a current Haiku.
const DefaultSummaryModel = string(anthropic.ModelClaudeHaiku5_5)

// DefaultSummaryMaxTokens bounds a summary's length when
// [SummarizerOptions.MaxTokens] is 0.
const DefaultSummaryMaxTokens = 400

// SummarizerOptions configure a [Summarizer]. The zero value means the
// defaults.
type SummarizerOptions struct {
	// Model writes the summaries; "" means DefaultSummaryModel.
	Model string
	// MaxTokens bounds each summary; 0 means DefaultSummaryMaxTokens.
	MaxTokens int
	// Family is whose notes the summarizer is shown: those the person
	// sees, the family's and their own private ones. A Family with no
	// ID shows none.
	Family conversation.Family
	// RequestTimeout bounds the call; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Summarizer writes running summaries with the Messages API. It
// implements [conversation.Summarizer] and is safe for concurrent use.
type Summarizer struct {
	client  anthropic.Client
	mem     *conversation.Memory
	model   string
	maxTok  int
	fam     conversation.Family
	timeout time.Duration
}

var _ conversation.Summarizer = (*Summarizer)(nil)

// NewSummarizer returns a Summarizer that calls the Messages API with
// client and reads the notes it is shown from mem.
func NewSummarizer(client anthropic.Client, mem *conversation.Memory, opts *SummarizerOptions) (*Summarizer, error) {
	var o SummarizerOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxTokens < 0 {
		return nil, fmt.Errorf("assistant: summarizer: max tokens must not be negative, got %d", o.MaxTokens)
	}
	if o.Model == "" {
		o.Model = DefaultSummaryModel
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultSummaryMaxTokens
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return &Summarizer{client: client, mem: mem, model: o.Model, maxTok: o.MaxTokens, fam: o.Family, timeout: o.RequestTimeout}, nil
}

// newSummarizer returns the summarizer of o.Summaries, shown the notes of
// o.Summaries.Family, or else of fam, the notes' family, or else of the
// family of o's members under conversation.DefaultFamilyID.
func newSummarizer(client anthropic.Client, mem *conversation.Memory, o Options, fam conversation.Family) (*Summarizer, error) {
	so := *o.Summaries
	if so.Family.ID == "" {
		so.Family = fam
	}
	if so.Family.ID == "" {
		so.Family = conversation.Family{ID: conversation.DefaultFamilyID, Claim: true, Members: map[string]string{}}
		for p, person := range o.Family {
			so.Family.Members[p] = person.Name
		}
	}
	if so.RequestTimeout == 0 {
		so.RequestTimeout = o.RequestTimeout
	}
	return NewSummarizer(client, mem, &so)
}

// Summarizer returns the assistant's summarizer, for serve's sweep to fold
// with ([conversation.Memory.SweepEvery]), or nil when summaries are off.
func (a *Assistant) Summarizer() conversation.Summarizer {
	if a.summarizer == nil {
		return nil
	}
	return a.summarizer
}

// sessionSummary returns the summary phone is shown at the start of a
// session: the turns that left phone's conversation and that no sweep has
// folded yet are folded first (as with mombot ask, where no sweep runs),
// so that the summary is there when it is needed most. A failure to fold
// is logged and the summary as it was is shown; "" when summaries are off
// or phone keeps none.
func (a *Assistant) sessionSummary(ctx context.Context, phone string, log *slog.Logger) string {
	if a.summarizer == nil || !a.mem.Summarizes(phone) {
		return ""
	}
	s, err := a.mem.FoldSummary(ctx, phone, a.summarizer)
	if err != nil {
		log.Warn("assistant: folding turns into the summary failed; they stay pending", "err", err)
	}
	return s.Text
}

// summaryPrompt is the summarizer's system prompt.
const summaryPrompt = `You keep a family assistant's running summary of its conversations with one person. Fold the new turns into the summary so far. Keep facts, decisions, plans, open questions and the assistant's promises; drop small talk and what is settled. Never restate a note (notes are shown separately; a gone note stays gone) and never write anything [forgotten]. Short lines starting with "- ", most important first, at most 100 words, in the conversation's language. Answer with the summary only.`

// Summarize implements [conversation.Summarizer].
func (s *Summarizer) Summarize(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
	var out conversation.SummaryOutput
	var notes []conversation.Note
	if s.fam.ID != "" {
		var err error
		notes, err = s.mem.Notes(ctx, s.fam, in.Phone)
		if err != nil && !errors.Is(err, conversation.ErrNotMember) {
			return out, fmt.Errorf("assistant: summarize: %w", err)
		}
	}
	out.Family = s.fam.ID
	for _, n := range notes {
		out.NoteIDs = append(out.NoteIDs, n.ID)
		out.Notes = append(out.Notes, conversation.ShownNote{ID: n.ID, Scope: n.Scope, Text: n.Text})
	}
	prompt := summaryRequest(in, notes)
	msg, err := s.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(s.model),
		MaxTokens: int64(s.maxTok),
		System:    []anthropic.TextBlockParam{{Text: summaryPrompt}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}, option.WithRequestTimeout(s.timeout))
	if err != nil {
		return out, fmt.Errorf("assistant: summarize: %w", err)
	}
	var r struct {
		Usage Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(msg.RawJSON()), &r); err == nil {
		r.Usage.Calls = 1
		out.Usage = r.Usage.ledgerEntry()
		out.Usage.Messages = 0 // no message of the person's
		out.Usage.Summarizer = out.Usage.Tokens
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	out.Text = strings.TrimSpace(text.String())
	return out, nil
}

// maxTurnText bounds what one block of a turn adds to the summarizer's
// prompt, in bytes, and maxReplyText what one of the assistant's texts
// adds: the person's words carry the facts, the replies mostly repeat
// them.
const (
	maxTurnText  = 2000
	maxReplyText = 300
)

// summaryRequest renders the summarizer's user message: the notes, the
// summary so far, and the leaving turns as a transcript.
func summaryRequest(in conversation.SummaryInput, notes []conversation.Note) string {
	var b strings.Builder
	b.WriteString("Long-term notes (shown separately; do not restate):\n")
	if len(notes) == 0 {
		b.WriteString("(none)\n")
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "#%d (%s) %s\n", n.ID, n.Scope, conversation.OneLine(n.Text))
	}
	b.WriteString("\nSummary so far:\n")
	if p := strings.TrimSpace(in.Previous); p != "" {
		b.WriteString(p)
		b.WriteByte('\n')
	} else {
		b.WriteString("(none)\n")
	}
	b.WriteString("\nTurns to fold in, oldest first:\n")
	for _, t := range in.Turns {
		for _, m := range t.Messages {
			writeTranscript(&b, m)
		}
	}
	return b.String()
}

// writeTranscript writes m as transcript lines: texts as said, tool calls
// and results as one bracketed line each.
func writeTranscript(b *strings.Builder, m conversation.Message) {
	who := "Person"
	if m.Role == conversation.RoleAssistant {
		who = "Assistant"
	}
	if m.IsString() {
		fmt.Fprintf(b, "%s: %s\n", who, clipLine(m.Text()))
		return
	}
	blocks, err := m.Blocks()
	if err != nil {
		return
	}
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			text := clipLine(bl.Text)
			if m.Role == conversation.RoleAssistant && len(text) > maxReplyText {
				text = clipTo(text, maxReplyText)
			}
			fmt.Fprintf(b, "%s: %s\n", who, text)
		case "tool_use":
			fmt.Fprintf(b, "[assistant used %s %s]\n", bl.Name, clipLine(string(bl.Input)))
		case "tool_result":
			fmt.Fprintf(b, "[result: %s]\n", clipLine(toolResultText(bl.Content)))
		}
	}
}

// toolResultText returns a tool_result's content as text: the string, or
// its text blocks joined.
func toolResultText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, bl := range blocks {
		if bl.Type == "text" {
			parts = append(parts, bl.Text)
		}
	}
	return strings.Join(parts, " ")
}

// clipLine returns s on one line, at most maxTurnText bytes.
func clipLine(s string) string { return clipTo(conversation.OneLine(s), maxTurnText) }

// clipTo returns s cut to at most n bytes, "…" marking a cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
