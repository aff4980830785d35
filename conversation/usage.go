package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	phonepkg "github.com/mombot/mombot/phone"
)

// ErrInvalidUsage is returned by [Memory.AddUsage] for a usage with a
// negative count.
var ErrInvalidUsage = errors.New("invalid usage")

// Usage is what a person's messages cost on one day: how many messages were
// answered, how many Messages API calls they took, and the tokens those
// calls were billed for, by kind.
type Usage struct {
	// Messages is the number of messages handled that made at least one
	// API call.
	Messages int64 `json:"messages,omitempty"`
	// Tokens are the calls and tokens of every model, the main one's and
	// the summarizer's; stored as members of the usage itself.
	Tokens
	// Summarizer is the part of Tokens that the running summaries' model
	// took (memory.summary_model): it bills at its own rates.
	Summarizer Tokens `json:"summarizer,omitzero"`
}

// Tokens are API calls and the tokens they were billed for, by kind.
// Input, cache writes and cache reads are disjoint: together they are the
// prompt.
type Tokens struct {
	// Calls is the number of API calls that returned a message.
	Calls int64 `json:"calls,omitempty"`
	// InputTokens is the prompt tokens neither written to nor read from
	// the prompt cache.
	InputTokens int64 `json:"input_tokens,omitempty"`
	// CacheWrite5mTokens and CacheWrite1hTokens are the prompt tokens
	// written to the prompt cache with a 5-minute and a 1-hour lifetime.
	CacheWrite5mTokens int64 `json:"cache_write_5m_tokens,omitempty"`
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
	// CacheReadTokens is the prompt tokens read from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_tokens,omitempty"`
	// OutputTokens is the tokens the model wrote.
	OutputTokens int64 `json:"output_tokens,omitempty"`
}

// Main returns u's calls and tokens of the main model: all but the
// summarizer's.
func (u Usage) Main() Tokens { return u.Tokens.sub(u.Summarizer) }

func (t Tokens) add(o Tokens) Tokens {
	return Tokens{
		Calls:              t.Calls + o.Calls,
		InputTokens:        t.InputTokens + o.InputTokens,
		CacheWrite5mTokens: t.CacheWrite5mTokens + o.CacheWrite5mTokens,
		CacheWrite1hTokens: t.CacheWrite1hTokens + o.CacheWrite1hTokens,
		CacheReadTokens:    t.CacheReadTokens + o.CacheReadTokens,
		OutputTokens:       t.OutputTokens + o.OutputTokens,
	}
}

func (t Tokens) sub(o Tokens) Tokens {
	return t.add(Tokens{Calls: -o.Calls, InputTokens: -o.InputTokens, CacheWrite5mTokens: -o.CacheWrite5mTokens,
		CacheWrite1hTokens: -o.CacheWrite1hTokens, CacheReadTokens: -o.CacheReadTokens, OutputTokens: -o.OutputTokens})
}

// Add returns the sum of u and o, count by count.
func (u Usage) Add(o Usage) Usage {
	return Usage{Messages: u.Messages + o.Messages, Tokens: u.Tokens.add(o.Tokens), Summarizer: u.Summarizer.add(o.Summarizer)}
}

// IsZero reports whether every count of u is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

// PromptTokens is every token of the prompts: input, cache writes and
// cache reads.
func (t Tokens) PromptTokens() int64 {
	return t.InputTokens + t.CacheWrite5mTokens + t.CacheWrite1hTokens + t.CacheReadTokens
}

// Check returns an error wrapping [ErrInvalidUsage] if a count of u is
// negative.
func (u Usage) Check() error {
	for _, f := range []struct {
		name string
		n    int64
	}{
		{"messages", u.Messages}, {"api calls", u.Calls}, {"input tokens", u.InputTokens},
		{"5-minute cache writes", u.CacheWrite5mTokens}, {"1-hour cache writes", u.CacheWrite1hTokens},
		{"cache reads", u.CacheReadTokens}, {"output tokens", u.OutputTokens},
	} {
		if f.n < 0 {
			return fmt.Errorf("conversation: %w: %s must not be negative, got %d", ErrInvalidUsage, f.name, f.n)
		}
	}
	if u.Summarizer.negative() {
		return fmt.Errorf("conversation: %w: the summarizer's counts must not be negative", ErrInvalidUsage)
	}
	if u.Main().negative() {
		return fmt.Errorf("conversation: %w: the summarizer's part is more than the whole", ErrInvalidUsage)
	}
	return nil
}

func (t Tokens) negative() bool {
	return t.Calls < 0 || t.InputTokens < 0 || t.CacheWrite5mTokens < 0 || t.CacheWrite1hTokens < 0 || t.CacheReadTokens < 0 || t.OutputTokens < 0
}

// DailyUsage is one phone's usage on one day.
type DailyUsage struct {
	Phone string
	// Day is the start of the day, midnight UTC; see [UsageDay].
	Day time.Time
	Usage
}

// UsageDay returns the day t falls on for the usage ledger: midnight UTC
// starting t's calendar day in UTC. The ledger counts days in UTC, so that
// every process and replica, whatever its time zone, adds to the same day.
func UsageDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// compareDailyUsage orders entries by day and then phone, the order of
// [Memory.UsageSince].
func compareDailyUsage(a, b DailyUsage) int {
	if c := a.Day.Compare(b.Day); c != 0 {
		return c
	}
	return strings.Compare(a.Phone, b.Phone)
}

// UsageDayLayout is how a day of the ledger is written in its keys: "2006-01-02".
const UsageDayLayout = time.DateOnly

// checkAddUsage checks the arguments of [Memory.AddUsage]: the phone (an error wrapping [ErrInvalidPhone]) and the
// counts (an error wrapping [ErrInvalidUsage]). It returns skip when there
// is nothing to record: the usage is all zeros, or phone is the system
// sender, which is never stored.
func checkAddUsage(phone string, u Usage) (skip bool, err error) {
	if err := CheckPhone(phone); err != nil {
		return false, err
	}
	if phone == Anonymous {
		return false, fmt.Errorf("conversation: %w: %q is the ledger's anonymous totals", ErrInvalidPhone, phone)
	}
	if err := u.Check(); err != nil {
		return false, err
	}
	return phone == SystemSender || u.IsZero(), nil
}

// AddUsage adds u to phone's usage on the day (UTC) of at, in the usage
// ledger: a record per person and day that outlives the conversation, so
// clearing a conversation, its expiry and sweeps leave it as it is. A
// concurrent AddUsage, from any process, is never lost. A phone that
// [CheckPhone] refuses and a usage with a negative count are errors wrapping
// ErrInvalidPhone and ErrInvalidUsage. Usage of the system sender and a
// usage of all zeros are not recorded, and AddUsage returns nil.
func (m *Memory) AddUsage(ctx context.Context, phone string, at time.Time, u Usage) error {
	skip, err := checkAddUsage(phone, u)
	if err != nil || skip {
		return err
	}
	if err := m.addUsage(ctx, UsageDay(at), phone, u); err != nil {
		return fmt.Errorf("conversation: add usage: %w", err)
	}
	return nil
}

// addUsage adds u to the ledger's record of phone on day.
func (m *Memory) addUsage(ctx context.Context, day time.Time, phone string, u Usage) error {
	return m.updateRecord(ctx, UsageDays, usageKey(day, phone), 0, func(data []byte) ([]byte, error) {
		var sum Usage
		if data != nil {
			if err := json.Unmarshal(data, &sum); err != nil {
				// The error reaches the log: the phone is masked.
				return nil, fmt.Errorf("stored usage of %s on %s: %w", phonepkg.Mask(phone), day.Format(UsageDayLayout), err)
			}
		}
		return json.Marshal(sum.Add(u))
	})
}

// UsageSince returns the usage of every phone on every day from the day
// (UTC) of since on, all of it when since is the zero time, ordered by day
// and then phone, one entry per phone and day that has any. A day older
// than the usage retention has one entry whose Phone is [Anonymous]: the
// family's total of that day.
func (m *Memory) UsageSince(ctx context.Context, since time.Time) ([]DailyUsage, error) {
	recs, err := m.store.List(ctx, UsageDays, "")
	if err != nil {
		return nil, fmt.Errorf("conversation: usage: %w", err)
	}
	from := UsageDay(since)
	var out []DailyUsage
	for _, rec := range recs {
		dayStr, phone, ok := strings.Cut(rec.Key, "/")
		day, derr := time.Parse(UsageDayLayout, dayStr)
		if !ok || derr != nil {
			return nil, fmt.Errorf("conversation: usage: a record under %q is not a day and a phone", rec.Key)
		}
		if !since.IsZero() && day.Before(from) {
			continue
		}
		var u Usage
		if err := json.Unmarshal(rec.Data, &u); err != nil {
			return nil, fmt.Errorf("conversation: usage of %s: %w", rec.Key, err)
		}
		out = append(out, DailyUsage{Day: day, Phone: phone, Usage: u})
	}
	slices.SortFunc(out, compareDailyUsage)
	return out, nil
}
