package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidUsage is returned by [UsageLedger.AddUsage] for a usage with a
// negative count.
var ErrInvalidUsage = errors.New("invalid usage")

// Usage is what a person's messages cost on one day: how many messages were
// answered, how many Messages API calls they took, and the tokens those
// calls were billed for, by kind. Input, cache writes and cache reads are
// disjoint: together they are the prompt.
type Usage struct {
	// Messages is the number of messages handled that made at least one
	// API call.
	Messages int64
	// Calls is the number of API calls that returned a message.
	Calls int64
	// InputTokens is the prompt tokens neither written to nor read from
	// the prompt cache.
	InputTokens int64
	// CacheWrite5mTokens and CacheWrite1hTokens are the prompt tokens
	// written to the prompt cache with a 5-minute and a 1-hour lifetime.
	CacheWrite5mTokens int64
	CacheWrite1hTokens int64
	// CacheReadTokens is the prompt tokens read from the prompt cache.
	CacheReadTokens int64
	// OutputTokens is the tokens the model wrote.
	OutputTokens int64
}

// Add returns the sum of u and o, field by field.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Messages:           u.Messages + o.Messages,
		Calls:              u.Calls + o.Calls,
		InputTokens:        u.InputTokens + o.InputTokens,
		CacheWrite5mTokens: u.CacheWrite5mTokens + o.CacheWrite5mTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens + o.CacheWrite1hTokens,
		CacheReadTokens:    u.CacheReadTokens + o.CacheReadTokens,
		OutputTokens:       u.OutputTokens + o.OutputTokens,
	}
}

// IsZero reports whether every count of u is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

// PromptTokens is every token of the prompts: input, cache writes and
// cache reads.
func (u Usage) PromptTokens() int64 {
	return u.InputTokens + u.CacheWrite5mTokens + u.CacheWrite1hTokens + u.CacheReadTokens
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
	return nil
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

// CompareDailyUsage orders entries by day and then phone, the order of
// [UsageLedger.UsageSince].
func CompareDailyUsage(a, b DailyUsage) int {
	if c := a.Day.Compare(b.Day); c != 0 {
		return c
	}
	return strings.Compare(a.Phone, b.Phone)
}

// UsageDayLayout is how stores write a day of the ledger: "2006-01-02".
const UsageDayLayout = time.DateOnly

// CheckAddUsage checks the arguments of [UsageLedger.AddUsage] as every
// store must: the phone (an error wrapping [ErrInvalidPhone]) and the
// counts (an error wrapping [ErrInvalidUsage]). It returns skip when there
// is nothing to record: the usage is all zeros, or phone is the system
// sender, which is never stored.
func CheckAddUsage(phone string, u Usage) (skip bool, err error) {
	if err := CheckPhone(phone); err != nil {
		return false, err
	}
	if err := u.Check(); err != nil {
		return false, err
	}
	return phone == SystemSender || u.IsZero(), nil
}

// UsageLedger is a per-person, per-day record of what the assistant's API
// calls cost. Every store in this module keeps one, next to the
// conversations and in the same storage, but apart from them: it outlives
// the conversation, so clearing a conversation ([Memory.Clear]), its expiry
// and a store's sweep leave it as it is, and a conversation's turn cap
// never drops any of it.
//
// Days are calendar days in UTC (see [UsageDay]).
//
// Implementations are safe for concurrent use by many goroutines and, where
// their storage is shared, by many processes (or replicas): AddUsage is
// atomic and never loses a concurrent AddUsage, whichever process makes it.
type UsageLedger interface {
	// AddUsage adds u to phone's usage on the day (UTC) of at. Once it
	// returns nil the addition is durable, as durable as a turn the same
	// store has saved; on error nothing is added. A phone that [CheckPhone]
	// refuses and a usage with a negative count are errors wrapping
	// ErrInvalidPhone and ErrInvalidUsage. Usage of the system sender and
	// a usage of all zeros are not recorded, and AddUsage returns nil.
	AddUsage(ctx context.Context, phone string, at time.Time, u Usage) error

	// UsageSince returns the usage of every phone on every day from the
	// day (UTC) of since on, all of it when since is the zero time, ordered
	// by day and then phone, one entry per phone and day that has any.
	UsageSince(ctx context.Context, since time.Time) ([]DailyUsage, error)
}
