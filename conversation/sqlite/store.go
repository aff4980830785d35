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

// Load implements [conversation.Store]. A row whose checksum matches was
// validated when it was saved and is split into messages without decoding
// again (see [conversation.ParseStoredTurn]). The others (rows written
// before this version, or edited since) are decoded and, if any, every turn
// is passed through [conversation.Repair]: those that do not decode or fail
// [conversation.ValidateTurn] are left out and their number is logged as a
// warning.
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	var c conversation.Conversation
	var found bool
	var undecodable int
	var foreign bool
	err := s.reading(ctx, func(db *sql.DB) error {
		var rows *sql.Rows
		var err error
		if s.load != nil {
			rows, err = s.load.QueryContext(ctx, phone)
		} else {
			rows, err = db.QueryContext(ctx, queryLoad, phone)
		}
		if err != nil {
			return err
		}
		c, found, undecodable, foreign, err = scanConversation(rows, phone)
		return err
	})
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", plain(s.path, err))
	}
	if !found {
		return conversation.Conversation{}, fmt.Errorf("sqlite: load: %w", conversation.ErrNotFound)
	}
	if !foreign {
		return c, nil
	}
	// Rows written by another program or an older version: a history with
	// a broken turn would make every later request fail.
	var invalid int
	c.Turns, invalid = conversation.Repair(c.Turns)
	if dropped := undecodable + invalid; dropped > 0 {
		s.log.WarnContext(ctx, "sqlite: dropped invalid stored turns",
			"phone", maskPhone(phone), "dropped", dropped, "kept", len(c.Turns))
	}
	return c, nil
}

// scanConversation reads queryLoad's rows, and closes them: found says
// whether the conversation is stored, undecodable counts the turns that do
// not decode, and foreign whether a row lacked its checksum (so the turns
// need conversation.Repair).
func scanConversation(rows *sql.Rows, phone string) (c conversation.Conversation, found bool, undecodable int, foreign bool, err error) {
	defer rows.Close()
	c = conversation.Conversation{Phone: phone, Turns: make([]conversation.Turn, 0, conversation.DefaultMaxTurns)}
	for rows.Next() {
		var last int64
		var data []byte
		var sum sql.NullInt64
		if err := rows.Scan(&last, &data, &sum); err != nil {
			return c, false, 0, false, err
		}
		found = true
		c.LastActive = time.Unix(0, last)
		if data == nil { // a conversation row without turns
			continue
		}
		if sum.Valid && uint32(sum.Int64) == conversation.Checksum(data) {
			if t, err := conversation.ParseStoredTurn(data); err == nil {
				c.Turns = append(c.Turns, t)
				continue
			}
		}
		foreign = true
		var t conversation.Turn
		if err := json.Unmarshal(data, &t); err != nil {
			undecodable++
			continue
		}
		c.Turns = append(c.Turns, t)
	}
	return c, found, undecodable, foreign, rows.Err()
}

// row is a turn as the turns table holds it.
type row struct {
	json []byte
	sum  any // int64, or nil for a turn that was not validated
	ids  string
	own  []string // the turn's tool_use ids
}

// newRow encodes turn; trusted says whether it was validated, so that its
// checksum may be stored.
func newRow(turn conversation.Turn, trusted bool) (row, error) {
	data, err := turn.MarshalJSON()
	if err != nil {
		return row{}, err
	}
	r := row{json: data, own: turn.ToolUseIDs()}
	if trusted {
		r.sum = int64(conversation.Checksum(data))
	}
	ids, err := json.Marshal(r.own)
	if err != nil {
		return row{}, err
	}
	r.ids = string(ids)
	if r.own == nil {
		r.ids = "[]"
	}
	return r, nil
}

// Append implements [conversation.Store] in one BEGIN IMMEDIATE
// transaction. It reads the conversation's row, whose turn index (see
// turnIndex) holds the seq and tool_use ids of every stored turn, checks
// the turn's ids against those of the turns that stay, writes the turn
// (over the row of the oldest turn when the cap drops it, as a new row
// otherwise) and the conversation's last activity and index. An expired
// conversation's turns are deleted first. When the index is missing or
// does not match the rows, the turns are read instead (see appendSlow).
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	if err := s.writable(); err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	r, err := newRow(turn, true)
	if err != nil {
		return fmt.Errorf("sqlite: append: %w", plain(s.path, err))
	}
	if err := s.lockWrite(ctx); err != nil {
		return fmt.Errorf("sqlite: append: %w", plain(s.path, err))
	}
	defer s.unlockWrite()
	if err := s.append(ctx, phone, r, now, lim); err != nil {
		return fmt.Errorf("sqlite: append: %w", plain(s.path, err))
	}
	return nil
}

func (s *Store) append(ctx context.Context, phone string, r row, now time.Time, lim conversation.Limits) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see dsn
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var last sql.NullInt64
	var stored sql.NullString
	var rows rowSeqs
	err = s.stmt(ctx, tx, querySaveState).QueryRowContext(ctx, phone).Scan(&last, &stored, &rows.n, &rows.lo, &rows.hi)
	if err == nil && !last.Valid {
		err = sql.ErrNoRows // no conversation: the aggregate's row is empty
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The conversation's row goes first, for the turn's foreign key.
		idx := turnIndex{entry(1, r.own)}
		if _, err := s.stmt(ctx, tx, queryInsertConv).ExecContext(ctx, phone, now.UnixNano(), idx.text(now.UnixNano())); err != nil {
			return err
		}
		seq, err := s.insertTurn(ctx, tx, phone, r)
		if err != nil {
			return err
		}
		if seq != 1 {
			// Turns without a conversation, left by a hand edit with
			// foreign keys off: the next save reads them.
			if _, err := s.stmt(ctx, tx, queryTouchConv).ExecContext(ctx, phone, now.UnixNano(), nil); err != nil {
				return err
			}
		}
		return tx.Commit()
	case err != nil:
		return err
	}

	var idx turnIndex
	switch {
	case conversation.Expired(time.Unix(0, last.Int64), now, lim.Timeout):
		// conversation.AppendTurn's rule: a save into an expired
		// conversation starts a new one.
		if _, err := s.stmt(ctx, tx, queryDeleteTurns).ExecContext(ctx, phone); err != nil {
			return err
		}
		seq, err := s.insertTurn(ctx, tx, phone, r)
		if err != nil {
			return err
		}
		idx = turnIndex{entry(seq, r.own)}
	default:
		idx, err = s.appendCurrent(ctx, tx, phone, r, stored, last.Int64, rows, lim)
		if errors.Is(err, errStaleIndex) {
			idx, err = s.appendSlow(ctx, tx, phone, r, lim)
		}
		if err != nil {
			return err
		}
	}
	var text any // NULL: the rows' seqs do not follow each other
	if idx.consecutive() {
		text = idx.text(now.UnixNano())
	}
	if _, err := s.stmt(ctx, tx, queryTouchConv).ExecContext(ctx, phone, now.UnixNano(), text); err != nil {
		return err
	}
	return tx.Commit()
}

// rowSeqs is what querySaveState reads of a conversation's turn rows: how
// many, and their lowest and highest seqs (NULL without rows).
type rowSeqs struct {
	n      int64
	lo, hi sql.NullInt64
}

// errStaleIndex is appendCurrent's answer when the conversation's turn
// index is missing or does not describe its rows.
var errStaleIndex = errors.New("turn index out of date")

// appendCurrent adds r to a conversation that goes on, last active at
// last, whose turn index is stored (the turn_ids column) and whose turn
// rows are rows, and returns the new index. It changes nothing and returns
// errStaleIndex unless the index parses, was written with last, and lists
// exactly those rows.
func (s *Store) appendCurrent(ctx context.Context, tx *sql.Tx, phone string, r row, stored sql.NullString, last int64, rows rowSeqs, lim conversation.Limits) (turnIndex, error) {
	if !stored.Valid {
		return nil, errStaleIndex
	}
	idx, stamp, err := parseTurnIndex(stored.String)
	if err != nil || stamp != last || !idx.matches(rows.n, rows.lo.Int64, rows.hi.Int64) {
		return nil, errStaleIndex
	}
	// What stays next to the new turn: conversation.KeptTurns (the
	// conversation goes on, so the newest lim.MaxTurns-1, or all).
	keep := len(idx)
	if lim.MaxTurns > 0 {
		keep = min(keep, lim.MaxTurns-1)
	}
	kept, dropped := idx[len(idx)-keep:], idx[:len(idx)-keep]
	if len(r.own) > 0 {
		var inUse []string
		for _, e := range kept {
			if inUse, err = e.toolIDs(inUse); err != nil {
				return nil, err
			}
		}
		if err := conversation.CheckToolIDs(r.own, inUse); err != nil {
			return nil, err
		}
	}
	seq := int64(1)
	if len(idx) > 0 {
		seq = idx[len(idx)-1].seq + 1
	}
	if len(dropped) == 0 {
		_, err = s.stmt(ctx, tx, queryInsertTurnAt).ExecContext(ctx, phone, seq, r.json, r.sum, r.ids)
	} else {
		// The newest turn that the cap drops becomes the new turn, in
		// place (see queryRecycleTurn); any older go (a cap lowered
		// since they were saved).
		recycle := dropped[len(dropped)-1].seq
		var res sql.Result
		if res, err = s.stmt(ctx, tx, queryMoveTurn).ExecContext(ctx, phone, seq, r.json, r.sum, r.ids, recycle); err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				err = fmt.Errorf("recycled %d rows of seq %d, want 1", n, recycle)
			}
		}
		if err == nil && len(dropped) > 1 {
			_, err = s.stmt(ctx, tx, queryDeleteTurnsBefore).ExecContext(ctx, phone, recycle)
		}
	}
	if err != nil {
		return nil, err
	}
	return append(kept[:len(kept):len(kept)], entry(seq, r.own)), nil
}

// appendSlow adds r to a conversation that goes on, reading its turns:
// their tool_ids (or json, in rows from before that column) for the check
// of r's ids, and the turn index written anew from them once r is in.
func (s *Store) appendSlow(ctx context.Context, tx *sql.Tx, phone string, r row, lim conversation.Limits) (turnIndex, error) {
	if err := checkToolIDs(ctx, tx, s.prepared[queryToolIDs], phone, r.own, lim); err != nil {
		return nil, err
	}
	// A full conversation's oldest row that the cap drops becomes the
	// new turn; otherwise the turn is a new row.
	recycled := int64(0)
	if lim.MaxTurns > 0 {
		res, err := s.stmt(ctx, tx, queryRecycleTurn).ExecContext(ctx, phone, r.json, r.sum, r.ids, lim.MaxTurns-1)
		if err != nil {
			return nil, err
		}
		if recycled, err = res.RowsAffected(); err != nil {
			return nil, err
		}
	}
	if recycled == 0 {
		if _, err := s.insertTurn(ctx, tx, phone, r); err != nil {
			return nil, err
		}
	}
	if lim.MaxTurns > 0 {
		if _, err := s.stmt(ctx, tx, queryCapTurns).ExecContext(ctx, phone, lim.MaxTurns-1); err != nil {
			return nil, err
		}
	}
	return readTurnIndex(ctx, tx.StmtContext(ctx, s.prepared[queryTurnIndex]), phone)
}

// insertTurn adds r after the phone's last turn and returns its seq.
func (s *Store) insertTurn(ctx context.Context, tx *sql.Tx, phone string, r row) (int64, error) {
	var seq int64
	err := s.stmt(ctx, tx, queryInsertTurn).QueryRowContext(ctx, phone, r.json, r.sum, r.ids).Scan(&seq)
	return seq, err
}

// readTurnIndex builds phone's turn index from its turn rows (queryTurnIndex).
// A row from before the tool_ids column has its json decoded; one that does
// not decode holds no ids (a load drops it).
func readTurnIndex(ctx context.Context, turnIndexStmt *sql.Stmt, phone string) (turnIndex, error) {
	rows, err := turnIndexStmt.QueryContext(ctx, phone)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var idx turnIndex
	for rows.Next() {
		var seq int64
		var stored sql.NullString
		var data []byte
		if err := rows.Scan(&seq, &stored, &data); err != nil {
			return nil, err
		}
		var ids []string
		if stored.Valid {
			if err := json.Unmarshal([]byte(stored.String), &ids); err != nil {
				return nil, fmt.Errorf("tool_ids: %w", err)
			}
		} else {
			var t conversation.Turn
			if json.Unmarshal(data, &t) == nil {
				ids = t.ToolUseIDs()
			}
		}
		idx = append(idx, entry(seq, ids))
	}
	return idx, rows.Err()
}

// checkToolIDs refuses ids that a turn staying next to the new one holds
// (see conversation.KeptTurns), reading their tool_ids column; rows from
// before it have their json decoded instead.
func checkToolIDs(ctx context.Context, tx *sql.Tx, toolIDs *sql.Stmt, phone string, ids []string, lim conversation.Limits) error {
	if len(ids) == 0 || lim.MaxTurns == 1 {
		return nil
	}
	keep := -1
	if lim.MaxTurns > 0 {
		keep = lim.MaxTurns - 1
	}
	rows, err := tx.StmtContext(ctx, toolIDs).QueryContext(ctx, phone, keep)
	if err != nil {
		return err
	}
	defer rows.Close()
	var inUse []string
	for rows.Next() {
		var stored sql.NullString
		var data []byte
		if err := rows.Scan(&stored, &data); err != nil {
			return err
		}
		if stored.Valid {
			var own []string
			if err := json.Unmarshal([]byte(stored.String), &own); err != nil {
				return fmt.Errorf("tool_ids: %w", err)
			}
			inUse = append(inUse, own...)
			continue
		}
		var t conversation.Turn
		if json.Unmarshal(data, &t) == nil { // one that does not decode is dropped on load
			inUse = append(inUse, t.ToolUseIDs()...)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return conversation.CheckToolIDs(ids, inUse)
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, phone string) error {
	n, err := s.exec(ctx, queryDelete, phone)
	if err != nil {
		return fmt.Errorf("sqlite: delete: %w", plain(s.path, err))
	}
	if n == 0 {
		return fmt.Errorf("sqlite: delete: %w", conversation.ErrNotFound)
	}
	return nil
}

// Expire implements [conversation.Store].
func (s *Store) Expire(ctx context.Context, phone string, cutoff time.Time) error {
	if _, err := s.exec(ctx, queryExpire, phone, cutoff.UnixNano()); err != nil {
		return fmt.Errorf("sqlite: expire: %w", plain(s.path, err))
	}
	return nil
}

// List implements [conversation.Store]. Turns counts the stored rows,
// including any that Load would drop as invalid.
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	var out []conversation.Summary
	err := s.reading(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, queryList)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []conversation.Summary{}
		for rows.Next() {
			var sum conversation.Summary
			var last int64
			if err := rows.Scan(&sum.Phone, &last, &sum.Turns); err != nil {
				return err
			}
			sum.LastActive = time.Unix(0, last)
			out = append(out, sum)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", plain(s.path, err))
	}
	return out, nil
}

// exec runs one writing statement under the write semaphore and returns the
// number of rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
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
