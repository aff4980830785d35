package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

// Load implements [conversation.Store]. Rows that do not decode as a turn or
// fail [conversation.ValidateTurn], such as rows edited by hand, are left out
// and their number is logged as a warning.
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	rows, err := s.db.QueryContext(ctx, queryLoad, phone)
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", err)
	}
	defer rows.Close()
	c := conversation.Conversation{Phone: phone}
	found, undecodable := false, 0
	for rows.Next() {
		var last int64
		var data []byte
		if err := rows.Scan(&last, &data); err != nil {
			return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", err)
		}
		found = true
		c.LastActive = time.Unix(0, last)
		if data == nil { // a conversation row without turns
			continue
		}
		var t conversation.Turn
		if err := json.Unmarshal(data, &t); err != nil {
			undecodable++
			continue
		}
		c.Turns = append(c.Turns, t)
	}
	if err := rows.Err(); err != nil {
		return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", err)
	}
	if !found {
		return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", conversation.ErrNotFound)
	}
	// Rows may have been written by another program or an older version;
	// a history with a broken turn would make every later request fail.
	var invalid int
	c.Turns, invalid = conversation.Repair(c.Turns)
	if dropped := undecodable + invalid; dropped > 0 {
		s.log.WarnContext(ctx, "sqlite: dropped invalid stored turns",
			"phone", maskPhone(phone), "dropped", dropped, "kept", len(c.Turns))
	}
	return c, nil
}

// Append implements [conversation.Store] in one BEGIN IMMEDIATE transaction
// that writes the new turn's row, and deletes the rows of an expired
// conversation or of turns beyond lim.MaxTurns.
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	data, err := turn.MarshalJSON()
	if err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	if err := s.lockWrite(ctx); err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	defer s.unlockWrite()
	if err := s.append(ctx, phone, data, now, lim); err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	return nil
}

func (s *Store) append(ctx context.Context, phone string, data []byte, now time.Time, lim conversation.Limits) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see dsn
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var last int64
	err = tx.QueryRowContext(ctx, queryLastActive, phone).Scan(&last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, queryInsertConv, phone, now.UnixNano())
	case err != nil:
		return err
	default:
		// conversation.AppendTurn's rule: a save into an expired
		// conversation starts a new one.
		if conversation.Expired(time.Unix(0, last), now, lim.Timeout) {
			if _, err := tx.ExecContext(ctx, queryDeleteTurns, phone); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, queryTouchConv, phone, now.UnixNano())
	}
	if err != nil {
		return err
	}

	if _, err := tx.ExecContext(ctx, queryInsertTurn, phone, data); err != nil {
		return err
	}
	if lim.MaxTurns > 0 {
		if _, err := tx.ExecContext(ctx, queryCapTurns, phone, lim.MaxTurns-1); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, phone string) error {
	n, err := s.exec(ctx, queryDelete, phone)
	if err != nil {
		return fmt.Errorf("sqlite: delete: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: delete: %w", conversation.ErrNotFound)
	}
	return nil
}

// Expire implements [conversation.Store].
func (s *Store) Expire(ctx context.Context, phone string, cutoff time.Time) error {
	if _, err := s.exec(ctx, queryExpire, phone, cutoff.UnixNano()); err != nil {
		return fmt.Errorf("sqlite: expire: %w", err)
	}
	return nil
}

// List implements [conversation.Store]. Turns counts the stored rows,
// including any that Load would drop as invalid.
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	rows, err := s.db.QueryContext(ctx, queryList)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	defer rows.Close()
	out := []conversation.Summary{}
	for rows.Next() {
		var sum conversation.Summary
		var last int64
		if err := rows.Scan(&sum.Phone, &last, &sum.Turns); err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
		sum.LastActive = time.Unix(0, last)
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	return out, nil
}

// exec runs one writing statement under the write semaphore and returns the
// number of rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := s.lockWrite(ctx); err != nil {
		return 0, err
	}
	defer s.unlockWrite()
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// maskPhone hides a number in the log; it is named so that it can be
// called where "phone" is a conversation key.
var maskPhone = phone.Mask
