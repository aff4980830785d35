package config

import (
	"fmt"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
)

// Memory is the "memory" object of the configuration file: the long-term
// memory's settings (docs/memory.md, docs/summaries.md).
type Memory struct {
	// Notes turns the family's notes (the remember and forget tools, and
	// the notes shown at each session's start) on or off; absent means
	// on.
	Notes *bool `json:"notes"`
	// Summaries turns the running summaries on or off; absent means on.
	Summaries *bool `json:"summaries"`
	// SummaryModel writes the summaries; empty means
	// assistant.DefaultSummaryModel.
	SummaryModel string `json:"summary_model"`
	// SummaryMaxTokens bounds each summary; 0 means
	// assistant.DefaultSummaryMaxTokens.
	SummaryMaxTokens int `json:"summary_max_tokens"`
	// SummaryKeep is how long a summary is kept after it was last
	// written, in days ("7d") or as a duration; empty means
	// conversation.DefaultSummaryKeep.
	SummaryKeep string `json:"summary_keep"`
}

// Summaries returns the summarizer's options and how long a summary is
// kept (0: the default), or nil options when memory.summaries is false or
// the family is empty (strangers keep no summaries).
func (c *File) Summaries() (*assistant.SummarizerOptions, time.Duration, error) {
	m := c.Memory
	if m.SummaryMaxTokens < 0 || m.SummaryMaxTokens > 4096 {
		return nil, 0, fmt.Errorf("memory.summary_max_tokens: want 1 to 4096, got %d", m.SummaryMaxTokens)
	}
	var keep time.Duration
	if m.SummaryKeep != "" {
		d, err := conversation.ParseRetention(m.SummaryKeep)
		if err != nil {
			return nil, 0, fmt.Errorf("memory.summary_keep: %w", err)
		}
		keep = d
	}
	if (m.Summaries != nil && !*m.Summaries) || len(c.Family) == 0 {
		return nil, keep, nil
	}
	return &assistant.SummarizerOptions{Model: m.SummaryModel, MaxTokens: m.SummaryMaxTokens}, keep, nil
}

// Member reports whether phone, in E.164 form, is in the family.
func (c *File) Member(phone string) bool {
	_, ok := c.Family[phone]
	return ok
}
