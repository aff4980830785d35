package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.UsageLedger = (*Store)(nil)

const (
	// queryAddUsage adds to a phone's day in one statement, so that two
	// processes adding at once are both counted: SQLite runs it under its
	// write lock, and the upsert reads and writes the row within it.
	queryAddUsage = `
		INSERT INTO usage (phone, day, messages, api_calls, input_tokens, cache_write_5m, cache_write_1h, cache_read, output_tokens)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (phone, day) DO UPDATE SET
			messages       = messages + excluded.messages,
			api_calls      = api_calls + excluded.api_calls,
			input_tokens   = input_tokens + excluded.input_tokens,
			cache_write_5m = cache_write_5m + excluded.cache_write_5m,
			cache_write_1h = cache_write_1h + excluded.cache_write_1h,
			cache_read     = cache_read + excluded.cache_read,
			output_tokens  = output_tokens + excluded.output_tokens`

	queryUsageSince = `
		SELECT phone, day, messages, api_calls, input_tokens, cache_write_5m, cache_write_1h, cache_read, output_tokens
		FROM usage WHERE day >= ?1
		ORDER BY day, phone`
)

// AddUsage implements [conversation.UsageLedger] in one upsert statement.
func (s *Store) AddUsage(ctx context.Context, phone string, at time.Time, u conversation.Usage) error {
	if skip, err := conversation.CheckAddUsage(phone, u); err != nil || skip {
		if err != nil {
			return fmt.Errorf("sqlite: add usage: %w", err)
		}
		return nil
	}
	day := conversation.UsageDay(at).Format(conversation.UsageDayLayout)
	if _, err := s.exec(ctx, queryAddUsage, phone, day, u.Messages, u.Calls, u.InputTokens,
		u.CacheWrite5mTokens, u.CacheWrite1hTokens, u.CacheReadTokens, u.OutputTokens); err != nil {
		return fmt.Errorf("sqlite: add usage: %w", err)
	}
	return nil
}

// UsageSince implements [conversation.UsageLedger].
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]conversation.DailyUsage, error) {
	from := ""
	if !since.IsZero() {
		from = conversation.UsageDay(since).Format(conversation.UsageDayLayout)
	}
	var out []conversation.DailyUsage
	err := s.reading(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, queryUsageSince, from)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []conversation.DailyUsage{}
		for rows.Next() {
			var d conversation.DailyUsage
			var day string
			if err := rows.Scan(&d.Phone, &day, &d.Messages, &d.Calls, &d.InputTokens,
				&d.CacheWrite5mTokens, &d.CacheWrite1hTokens, &d.CacheReadTokens, &d.OutputTokens); err != nil {
				return err
			}
			if d.Day, err = time.Parse(conversation.UsageDayLayout, day); err != nil {
				return fmt.Errorf("a row of %s has the day %q: %w", maskPhone(d.Phone), day, err)
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	return out, nil
}
