package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// summaryPrompt is the summarizer's system prompt.
const summaryPrompt = `You keep the running summary of a family assistant's conversations with one person, so that the assistant remembers them in later conversations. You are given the summary so far, the person's long-term notes, and the conversation turns that are leaving the assistant's short-term memory. Write the new summary: the summary so far with the new turns folded in.

Keep facts, decisions (what was decided, for when), plans, open questions and promises the assistant made. Drop greetings, small talk and anything already settled and no longer useful. Never restate a note's text: notes are shown to the assistant separately, and a note that is gone must stay gone; refer to a note by its number (#N) if you must. Never write anything marked [forgotten]. Write short lines starting with "- ", most important first, at most 200 words, in the language of the conversation. Answer with the summary only.`

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
	for _, n := range notes {
		out.NoteIDs = append(out.NoteIDs, n.ID)
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
// prompt, in bytes.
const maxTurnText = 2000

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
			fmt.Fprintf(b, "%s: %s\n", who, clipLine(bl.Text))
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
func clipLine(s string) string {
	s = conversation.OneLine(s)
	if len(s) <= maxTurnText {
		return s
	}
	s = s[:maxTurnText]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
