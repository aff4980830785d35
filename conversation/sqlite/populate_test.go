package sqlite_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// populate writes phones conversations of turns text turns each, last active
// at last, straight into the tables in one transaction: far faster than as
// many Appends, each of which is a durable commit. The rows are as Append
// writes them, checksum, tool ids and turn index included, so loads and
// saves take the path of turns this version saved.
func populate(tb testing.TB, db *sql.DB, phones, turns int, last time.Time) {
	tb.Helper()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	conv, err := tx.Prepare(`INSERT INTO conversations (phone, last_active, turn_ids) VALUES (?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := tx.Prepare(`INSERT INTO turns (phone, seq, json, sum, tool_ids) VALUES (?, ?, ?, ?, '[]')`)
	if err != nil {
		tb.Fatal(err)
	}
	data := make([][]byte, turns)
	for i := range data {
		data[i] = turnJSON(tb, fmt.Sprintf("question %d: what should we cook tonight?", i),
			fmt.Sprintf("answer %d: lemon chicken with rice takes about 30 minutes.", i))
	}
	// The turn index: the newest seq and the last activity, then an empty
	// line of ids a turn.
	index := fmt.Sprintf("%d %d\n", turns, last.UnixNano()) + strings.Repeat("\n", turns)
	for p := range phones {
		phone := benchPhone(p)
		if _, err := conv.Exec(phone, last.UnixNano(), index); err != nil {
			tb.Fatal(err)
		}
		for i, d := range data {
			if _, err := tr.Exec(phone, i+1, d, int64(conversation.Checksum(d))); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

func benchPhone(i int) string { return fmt.Sprintf("+1%010d", i) }

func turnJSON(tb testing.TB, user, reply string) []byte {
	tb.Helper()
	b, err := turn(user, reply).MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
