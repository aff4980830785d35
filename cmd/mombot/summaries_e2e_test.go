package main

import (
	"encoding/json"
	"strings"

	"github.com/mombot/mombot/assistant/anthropictest"
)

// fakeSummarizer answers the summarizer's requests (the model
// memory.summary_model names) for the end-to-end tests, deterministically:
// the summary so far, then a line "- " for each of the person's messages in
// the turns to fold, the last summaryLines of them. It reads the request as
// the summarizer writes it (assistant/summarize.go).
func fakeSummarizer(r anthropictest.Request) anthropictest.Response {
	prompt := summarizerPrompt(r)
	_, rest, _ := strings.Cut(prompt, "\nSummary so far:\n")
	previous, turns, _ := strings.Cut(rest, "\nTurns to fold in, oldest first:\n")
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(previous), "\n") {
		if l != "" && l != "(none)" {
			lines = append(lines, l)
		}
	}
	for l := range strings.SplitSeq(turns, "\n") {
		if said, ok := strings.CutPrefix(l, "Person: "); ok {
			lines = append(lines, "- "+said)
		}
	}
	if len(lines) > summaryLines {
		lines = lines[len(lines)-summaryLines:]
	}
	if len(lines) == 0 {
		lines = []string{"- nothing to keep"}
	}
	return anthropictest.Text(strings.Join(lines, "\n"))
}

// summaryLines bounds fakeSummarizer's summaries.
const summaryLines = 8

// summarizerPrompt returns the text of a summarizer's request: its one
// user message's text blocks.
func summarizerPrompt(r anthropictest.Request) string {
	if len(r.Params.Messages) != 1 {
		return ""
	}
	var m struct {
		Content []struct{ Type, Text string }
	}
	if json.Unmarshal(r.Params.Messages[0], &m) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}
