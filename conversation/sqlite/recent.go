package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.RecentMessages = (*Store)(nil)

// The statements of the recent messages (migration 0005). Each reaches its
// rows through an index; TestRecentQueryPlans holds them to that.
const (
	queryRememberRecent = `
		INSERT INTO recent_messages (phone, id, role, text, at) VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT (phone, id) DO UPDATE SET role = excluded.role, text = excluded.text, at = excluded.at`
	// queryPruneRecent forgets everyone's messages past the window.
	queryPruneRecent = `DELETE FROM recent_messages WHERE at < ?1`
	// queryCapRecent keeps a phone's newest ?2 messages (and any sent at
	// the same instant as the oldest of them).
	queryCapRecent = `
		DELETE FROM recent_messages WHERE phone = ?1 AND at < (
			SELECT at FROM recent_messages WHERE phone = ?1 ORDER BY at DESC LIMIT 1 OFFSET ?2 - 1)`
	queryRecallRecent = `SELECT role, text, at FROM recent_messages WHERE phone = ?1 AND id = ?2`
	queryForgetRecent = `DELETE FROM recent_messages WHERE phone = ?1`
)

// RememberMessages implements [conversation.RecentMessages] in one
// transaction.
func (s *Store) RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	add, skip, err := conversation.CheckRemember(phone, now, msgs)
	if err != nil {
		return fmt.Errorf("sqlite: remember messages: %w", err)
	}
	if skip {
		return nil
	}
	if err := s.writable(); err != nil {
		return fmt.Errorf("sqlite: remember messages: %w", err)
	}
	if err := s.lockWrite(ctx); err != nil {
		return fmt.Errorf("sqlite: remember messages: %w", err)
	}
	defer s.unlockWrite()
	if err := s.remember(ctx, phone, now, add); err != nil {
		return fmt.Errorf("sqlite: remember messages: %w", err)
	}
	return nil
}

func (s *Store) remember(ctx context.Context, phone string, now time.Time, add []conversation.RecentMessage) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see dsn
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, m := range add {
		if _, err := tx.ExecContext(ctx, queryRememberRecent, phone, m.ID, m.Role, m.Text, m.At.UnixNano()); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, queryPruneRecent, now.Add(-conversation.RecentWindow).UnixNano()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, queryCapRecent, phone, conversation.MaxRecentPerPhone); err != nil {
		return err
	}
	return tx.Commit()
}

// RecallMessage implements [conversation.RecentMessages].
func (s *Store) RecallMessage(ctx context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	m := conversation.RecentMessage{ID: id}
	var at int64
	err := s.reading(ctx, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, queryRecallRecent, phone, id).Scan(&m.Role, &m.Text, &at)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return conversation.RecentMessage{}, fmt.Errorf("sqlite: recall message: %w", conversation.ErrNotFound)
	}
	if err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("sqlite: recall message: %w", err)
	}
	m.At = time.Unix(0, at)
	if conversation.RecentExpired(m.At, now) {
		return conversation.RecentMessage{}, fmt.Errorf("sqlite: recall message: %w", conversation.ErrNotFound)
	}
	return m, nil
}

// ForgetMessages implements [conversation.RecentMessages].
func (s *Store) ForgetMessages(ctx context.Context, phone string) error {
	if _, err := s.exec(ctx, queryForgetRecent, phone); err != nil {
		return fmt.Errorf("sqlite: forget messages: %w", err)
	}
	return nil
}
