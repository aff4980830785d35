package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Replacer = (*Store)(nil)

// Replace implements [conversation.Replacer] in one BEGIN IMMEDIATE
// transaction: it reads the stored last activity, and unless that is newer
// deletes the conversation's rows and writes c's, with their turn index.
func (s *Store) Replace(ctx context.Context, c conversation.Conversation, _ time.Duration) (bool, error) {
	if err := s.writable(); err != nil {
		return false, fmt.Errorf("sqlite: replace: %w", err)
	}
	// Turns that all pass conversation.Repair as they are get their
	// checksums, so that loads need not validate them again; otherwise
	// every load validates them.
	_, dropped := conversation.Repair(c.Turns)
	data := make([]row, len(c.Turns))
	for i, t := range c.Turns {
		r, err := newRow(t, dropped == 0)
		if err != nil {
			return false, fmt.Errorf("sqlite: replace: %w", plain(s.path, err))
		}
		data[i] = r
	}
	if err := s.lockWrite(ctx); err != nil {
		return false, fmt.Errorf("sqlite: replace: %w", plain(s.path, err))
	}
	defer s.unlockWrite()
	replaced, err := s.replace(ctx, c.Phone, c.LastActive.UnixNano(), data)
	if err != nil {
		return false, fmt.Errorf("sqlite: replace: %w", plain(s.path, err))
	}
	return replaced, nil
}

func (s *Store) replace(ctx context.Context, phone string, last int64, turns []row) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see dsn
	if err != nil {
		return false, err
	}
	defer tx.Rollback()

	var stored int64
	err = tx.QueryRowContext(ctx, queryLastActive, phone).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case stored > last:
		return false, nil
	}
	// The turns go with the conversation (ON DELETE CASCADE).
	if _, err := tx.ExecContext(ctx, queryDelete, phone); err != nil {
		return false, err
	}
	idx := make(turnIndex, len(turns))
	for i, t := range turns {
		idx[i] = entry(int64(i+1), t.own)
	}
	if _, err := tx.ExecContext(ctx, queryInsertConv, phone, last, idx.text(last)); err != nil {
		return false, err
	}
	for i, t := range turns {
		if _, err := tx.ExecContext(ctx, queryInsertTurnAt, phone, i+1, t.json, t.sum, t.ids); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}
