package jsonfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

var _ conversation.UsageLedger = (*Store)(nil)

// The usage ledger ([conversation.UsageLedger]) lives in a file of its own
// next to the conversations, never inside conversations.json: the Python
// original reads every top-level member of that file as a phone. For
// data/conversations.json it is data/conversations.usage.json:
//
//	{
//	  "usage": {
//	    "+14155551234": {
//	      "2026-02-24": {"messages": 3, "api_calls": 4, "input_tokens": 120, ...}
//	    }
//	  }
//	}
//
// Days are UTC dates. Top-level keys other than "usage" are kept. The
// file is kept as every sibling file is (see sibling): every addition
// rewrites it atomically, mode 0600, holding the ledger's own lock file
// (the ledger's path + ".lock", made on the first addition), so that
// recording usage never waits for, or delays, a save of a conversation; a
// reader needs no lock. A ledger file that does not parse is moved aside,
// under the lock, to path + ".corrupt-<time>" with an error in the log, and
// counting starts anew; it is never overwritten. One that cannot be read
// (no permission, not a regular file) is an error and is left where it is.

// UsagePath returns the usage ledger's file for the conversations file at
// path: its name with ".json" replaced by ".usage.json", in the same folder.
func UsagePath(path string) string {
	return siblingPath(path, ".usage.json")
}

// usageCounts is one phone's day in the ledger file.
type usageCounts struct {
	Messages           int64 `json:"messages"`
	Calls              int64 `json:"api_calls"`
	InputTokens        int64 `json:"input_tokens"`
	CacheWrite5mTokens int64 `json:"cache_write_5m_tokens"`
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens"`
	CacheReadTokens    int64 `json:"cache_read_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
}

// usageFile is the ledger file's content.
type usageFile struct {
	usage map[string]map[string]usageCounts // phone, day
	other map[string]json.RawMessage        // other top-level keys, kept
}

func parseUsage(data []byte) (*usageFile, error) {
	f := &usageFile{usage: map[string]map[string]usageCounts{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file")
	}
	var err error
	if f.other, err = parseObject(data); err != nil {
		return nil, err
	}
	if raw, ok := f.other["usage"]; ok {
		if err := json.Unmarshal(raw, &f.usage); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		if f.usage == nil {
			f.usage = map[string]map[string]usageCounts{}
		}
		delete(f.other, "usage")
	}
	for number, days := range f.usage {
		if err := conversation.CheckPhone(number); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		if len(days) == 0 {
			delete(f.usage, number) // "number": null or {}, nothing recorded
			continue
		}
		for day, c := range days {
			if _, err := time.Parse(conversation.UsageDayLayout, day); err != nil {
				return nil, fmt.Errorf("usage of %s: %q is not a day like 2026-02-24", phone.Mask(number), day)
			}
			if err := c.usage().Check(); err != nil {
				return nil, fmt.Errorf("usage of %s on %s: %w", phone.Mask(number), day, err)
			}
		}
	}
	return f, nil
}

func (c usageCounts) usage() conversation.Usage { return conversation.Usage(c) }

// render writes the ledger file: sorted phones and days, one day's counts
// a line, then the other top-level keys, compacted. It is written by hand
// rather than with encoding/json's reflection and indentation, which cost
// ten times the fsync for a family's ledger of a few years.
func (f *usageFile) render() ([]byte, error) {
	b := make([]byte, 0, 64+len(f.usage)*32+f.days()*200)
	b = append(b, "{\n  \"usage\": {"...)
	for i, phone := range slices.Sorted(maps.Keys(f.usage)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = append(b, quote(phone)...)
		b = append(b, ": {"...)
		days := f.usage[phone]
		for j, day := range slices.Sorted(maps.Keys(days)) {
			if j > 0 {
				b = append(b, ',')
			}
			c := days[day]
			b = append(b, "\n      "...)
			b = append(b, quote(day)...)
			for _, n := range []struct {
				key string
				v   int64
			}{
				{`: {"messages": `, c.Messages}, {`, "api_calls": `, c.Calls}, {`, "input_tokens": `, c.InputTokens},
				{`, "cache_write_5m_tokens": `, c.CacheWrite5mTokens}, {`, "cache_write_1h_tokens": `, c.CacheWrite1hTokens},
				{`, "cache_read_tokens": `, c.CacheReadTokens}, {`, "output_tokens": `, c.OutputTokens},
			} {
				b = append(b, n.key...)
				b = strconv.AppendInt(b, n.v, 10)
			}
			b = append(b, '}')
		}
		b = append(b, "\n    }"...)
	}
	b = append(b, "\n  }"...)
	b, err := appendOther(b, f.other)
	if err != nil {
		return nil, err
	}
	b = append(b, "\n}\n"...)
	return b, nil
}

func (f *usageFile) days() int {
	n := 0
	for _, days := range f.usage {
		n += len(days)
	}
	return n
}

// newUsage returns the ledger kept beside the conversations file at path.
func newUsage(path string, log *slog.Logger, readOnly bool) *sibling[*usageFile] {
	upath := UsagePath(path)
	return &sibling[*usageFile]{
		path: upath, what: "the usage ledger", name: upath, log: log, readOnly: readOnly,
		anew:   "usage ledger file does not parse; moved it aside and kept it, counting anew",
		empty:  func() *usageFile { return &usageFile{usage: map[string]map[string]usageCounts{}} },
		parse:  parseUsage,
		render: (*usageFile).render,
	}
}

// AddUsage implements [conversation.UsageLedger]: it reads the ledger file,
// adds u and writes it back atomically, holding the ledger's lock file.
func (s *Store) AddUsage(ctx context.Context, phone string, at time.Time, u conversation.Usage) error {
	if skip, err := conversation.CheckAddUsage(phone, u); err != nil || skip {
		if err != nil {
			return fmt.Errorf("jsonfile: add usage: %w", err)
		}
		return nil
	}
	if s.readOnly {
		return fmt.Errorf("jsonfile: add usage: %w", ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonfile: add usage: %w", err)
	}
	day := conversation.UsageDay(at).Format(conversation.UsageDayLayout)
	err := s.usage.change(func(f *usageFile) (bool, error) {
		days := f.usage[phone]
		if days == nil {
			days = map[string]usageCounts{}
			f.usage[phone] = days
		}
		days[day] = usageCounts(days[day].usage().Add(u))
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: add usage: %w", err)
	}
	return nil
}

// UsageSince implements [conversation.UsageLedger]. It reads the ledger
// file without a lock: writers replace it whole. A file that does not parse
// is an error; the next AddUsage moves it aside.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]conversation.DailyUsage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jsonfile: usage: %w", err)
	}
	out := []conversation.DailyUsage{}
	err := s.usage.view(func(f *usageFile) error {
		from := conversation.UsageDay(since)
		for number, days := range f.usage {
			for day, c := range days {
				d, _ := time.Parse(conversation.UsageDayLayout, day) // checked by parseUsage
				if since.IsZero() || !d.Before(from) {
					out = append(out, conversation.DailyUsage{Phone: number, Day: d, Usage: c.usage()})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jsonfile: usage: %w", err)
	}
	slices.SortFunc(out, conversation.CompareDailyUsage)
	return out, nil
}
