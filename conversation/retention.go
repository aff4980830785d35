package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultUsageRetention is how long the usage ledger keeps who used the
// assistant on which day when [Options.UsageRetention] is zero: 395 days,
// thirteen months, so that a month can be compared with the same month a
// year before.
const DefaultUsageRetention = 395 * 24 * time.Hour

// Anonymous is the phone of a usage record that counts everyone: the
// ledger's days older than the usage retention are folded by
// [Memory.Sweep] into one record per day under "YYYY-MM-DD/*", which keeps
// the family's totals of the day and no phone number.
const Anonymous = "*"

// ParseRetention reads a retention period as a person configures it: a
// number of days ("395d") or a duration ("9480h"). It must be positive.
func ParseRetention(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 100*366 {
			return 0, fmt.Errorf("want a whole number of days (395d) or a duration (9480h), got %q", v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a whole number of days (395d) or a duration (9480h), got %q", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %q", v)
	}
	return d, nil
}

// usageKey returns the ledger's key of phone's usage on day.
func usageKey(day time.Time, phone string) string {
	return day.Format(UsageDayLayout) + "/" + phone
}

// sweepUsage folds every day of the ledger that began before now minus the
// usage retention into one [Anonymous] record of the day: each person's
// record of the day is added to it, then deleted. It returns how many
// personal records it folded. A crash between the addition and the delete
// counts that record twice in the day's total; a record changed since it
// was listed is left for the next sweep.
func (m *Memory) sweepUsage(ctx context.Context, now time.Time) (int, error) {
	recs, err := m.store.List(ctx, UsageDays, "")
	if err != nil {
		return 0, err
	}
	oldest := UsageDay(now.Add(-m.usageKeep))
	n := 0
	for _, rec := range recs {
		dayStr, phone, ok := strings.Cut(rec.Key, "/")
		day, derr := time.Parse(UsageDayLayout, dayStr)
		if !ok || derr != nil || phone == Anonymous || !day.Before(oldest) {
			continue
		}
		var u Usage
		if err := json.Unmarshal(rec.Data, &u); err != nil {
			return n, fmt.Errorf("usage of %s: %w", day.Format(UsageDayLayout), err)
		}
		if err := m.addAnonymous(ctx, day, u); err != nil {
			return n, err
		}
		err = m.store.Delete(ctx, UsageDays, rec.Key, rec.Version)
		switch {
		case err == nil:
			n++
		case errors.Is(err, ErrConflict):
			// Written since it was listed: its old counts are in the
			// day's total now, so take them back out.
			if err := m.addAnonymous(ctx, day, negate(u)); err != nil {
				return n, err
			}
		case !errors.Is(err, ErrNotFound):
			return n, err
		}
	}
	return n, nil
}

// negate returns u with every count's sign changed.
func negate(u Usage) Usage {
	return Usage{Messages: -u.Messages, Tokens: Tokens{}.sub(u.Tokens), Summarizer: Tokens{}.sub(u.Summarizer)}
}

// addAnonymous adds u to the [Anonymous] usage of day.
func (m *Memory) addAnonymous(ctx context.Context, day time.Time, u Usage) error {
	return m.addUsage(ctx, day, Anonymous, u)
}

// Erased counts the records [Memory.Erase] deleted, by kind.
type Erased map[Kind]int

// Total returns how many records were deleted in all.
func (e Erased) Total() int {
	n := 0
	for _, c := range e {
		n += c
	}
	return n
}

// String lists the counts by kind in the order of [Kinds], such as
// "conversations 1, recent 1, usage 12".
func (e Erased) String() string {
	kinds := slices.Sorted(maps.Keys(e))
	slices.SortStableFunc(kinds, func(a, b Kind) int { return kindOrder(a) - kindOrder(b) })
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, e[k]))
	}
	return strings.Join(parts, ", ")
}

func kindOrder(k Kind) int {
	if i := slices.Index(Kinds, k); i >= 0 {
		return i
	}
	return len(Kinds)
}

// about reports whether the record of kind under key is about phone, and so
// goes when phone's data is erased: a usage record of phone's on any day,
// and of every other kind a record whose key is phone or has phone as one
// of its "/"-separated parts ("phone", "phone/...", ".../phone"). Records of
// the family as a whole (the lists, a family's [Notes]) are about nobody:
// [Memory.Erase] removes a person's notes from them instead.
func about(kind Kind, key, phone string) bool {
	if kind == Notes {
		return false
	}
	if kind == UsageDays {
		_, p, ok := strings.Cut(key, "/")
		return ok && p == phone
	}
	return slices.Contains(strings.Split(key, "/"), phone)
}

// Erase deletes every record about phone of every kind in [Kinds]: a usage
// record of phone's on any day and, of any other kind, a record whose key is
// phone or has phone as one of its "/"-separated parts (the conversation,
// the recent messages, whatever per-person kind the domain has). Days
// already folded into an [Anonymous] total stay as totals. The notes phone
// wrote, private and family ones, become tombstones without content in every
// family, and leave the memory shown to the family's sessions; they count
// under [Notes]. It returns how many records of each kind it deleted. The
// bytes of what was deleted may stay in the store's storage until
// [Store.Scrub] runs, which the caller does once the store is open for
// nothing else.
func (m *Memory) Erase(ctx context.Context, phone string) (Erased, error) {
	if err := CheckPhone(phone); err != nil {
		return nil, err
	}
	if phone == Anonymous {
		return nil, fmt.Errorf("conversation: erase: %w: %q is the ledger's anonymous totals", ErrInvalidPhone, phone)
	}
	out := Erased{}
	for _, kind := range Kinds {
		recs, err := m.store.List(ctx, kind, "")
		if err != nil {
			return out, fmt.Errorf("conversation: erase: %w", err)
		}
		for _, rec := range recs {
			if !about(kind, rec.Key, phone) {
				continue
			}
			err := m.store.Delete(ctx, kind, rec.Key, 0)
			switch {
			case err == nil:
				out[kind]++
			case !errors.Is(err, ErrNotFound):
				return out, fmt.Errorf("conversation: erase: %w", err)
			}
		}
	}
	n, err := m.eraseNotes(ctx, phone)
	if n > 0 {
		out[Notes] += n
	}
	if err != nil {
		return out, fmt.Errorf("conversation: erase: notes: %w", err)
	}
	m.read.drop(phone)
	return out, nil
}
