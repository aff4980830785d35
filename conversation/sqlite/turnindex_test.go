package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// TestTurnIndexRoundTrip: whatever its ids hold (spaces, quotes, newlines,
// backslashes, other scripts), an index reads back as written, with its
// stamp.
func TestTurnIndexRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		idx   turnIndex
		stamp int64
		text  string
	}{
		{"empty", turnIndex{}, 5, "0 5\n"},
		{"no ids", turnIndex{entry(1, nil), entry(2, nil)}, 1771929300123456000, "2 1771929300123456000\n\n\n"},
		{"ids", turnIndex{entry(7, []string{"toolu_01A"}), entry(8, nil), entry(9, []string{"toolu_01B", "toolu_01C"})}, -1,
			"9 -1\n \"toolu_01A\"\n\n \"toolu_01B\" \"toolu_01C\"\n"},
		{"odd ids", turnIndex{entry(3, []string{`a "b" c`, "line\nbreak", `back\slash`, "x y", "ünï", " "})}, 0,
			"3 0\n \"a \\\"b\\\" c\" \"line\\nbreak\" \"back\\\\slash\" \"x y\" \"ünï\" \" \"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.idx.text(tt.stamp)
			if text != tt.text {
				t.Fatalf("text() = %q, want %q", text, tt.text)
			}
			got, stamp, err := parseTurnIndex(text)
			if err != nil {
				t.Fatalf("parseTurnIndex(%q): %v", text, err)
			}
			if !slices.Equal(got, tt.idx) || stamp != tt.stamp {
				t.Fatalf("parseTurnIndex(%q) = %+v, %d; want %+v, %d", text, got, stamp, tt.idx, tt.stamp)
			}
		})
	}
	odd := turnIndex{entry(3, []string{`a "b" c`, "line\nbreak"})}
	if ids, err := odd[0].toolIDs(nil); err != nil || !slices.Equal(ids, []string{`a "b" c`, "line\nbreak"}) {
		t.Fatalf("ids = %q, %v", ids, err)
	}
}

// TestTurnIndexMalformed: text that turnIndex.text did not write is
// refused, so that a save reads the turns instead of trusting it.
func TestTurnIndexMalformed(t *testing.T) {
	for _, text := range []string{
		"",                         // not even the first line
		"1 5",                      // no newline
		"1\n\n",                    // no stamp
		"x 5\n\n",                  // not a seq
		"-1 5\n",                   // nor this
		"01 5\n\n",                 // nor this, as written
		"+1 5\n\n",                 // nor this
		"1 05\n\n",                 // nor this stamp
		"1 5 \n\n",                 // trailing space
		"1  5\n\n",                 // two spaces
		"99999999999999999999 5\n", // overflows int64
		"1 5\n",                    // no turns: then the newest seq is 0
		"1 5\n\n\n",                // two turns up to seq 1: seqs start at 1
		"2 5\n \"a\"",              // a line without its newline
		"1 5\n toolu_01A\n",        // unquoted id
		"1 5\n\"a\"\n",             // no space before the id
		"1 5\n \"toolu_01A\n",      // unterminated
		"1 5\n \"a\"\"b\"\n",       // no space between ids
		"1 5\n  \"a\"\n",           // two spaces
		"1 5\n \"a\" \n",           // trailing space
		"1 5\n `a`\n",              // another quoting
		"1 5\n 'a'\n",              // a rune
	} {
		if x, _, err := parseTurnIndex(text); err == nil {
			t.Errorf("parseTurnIndex(%q) = %+v, want an error", text, x)
		}
	}
}

// FuzzParseTurnIndex: the index is read from the database, where a hand
// edit may have put anything; parsing never panics, and what parses has
// consecutive seqs from 1 on and is written back as it was read.
func FuzzParseTurnIndex(f *testing.F) {
	for _, s := range []string{"", "0 0\n", "1 5\n\n", "9 -7\n \"toolu_01A\"\n\n \"b\" \"c\"\n",
		"3 1771929300123456000\n \"a \\\"b\\\" c\" \"line\\nbreak\"\n", "1 5\n `a`\n", "1 5\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, stamp, err := parseTurnIndex(s)
		if err != nil {
			return
		}
		if !x.consecutive() || (len(x) > 0 && x[0].seq < 1) {
			t.Fatalf("%q parsed as %+v: seqs not consecutive from 1 on", s, x)
		}
		if got := x.text(stamp); got != s {
			t.Fatalf("%q parsed as %+v, %d, which is written as %q", s, x, stamp, got)
		}
		for _, e := range x {
			if _, err := e.toolIDs(nil); err != nil {
				t.Fatalf("%q parsed, but entry %d's ids do not: %v", s, e.seq, err)
			}
		}
	})
}

// indexTurn returns a valid turn asking q, with one tool call of id when
// id is not empty.
func indexTurn(q, id string) conversation.Turn {
	if id == "" {
		return conversation.Turn{Messages: storetest.TextTurn(q, "ok")}
	}
	return conversation.Turn{Messages: storetest.ToolTurn(q, id, "result", "done")}
}

// storedIndex returns the turn_ids column of phone's conversation, or
// "NULL".
func storedIndex(t *testing.T, db *sql.DB, phone string) string {
	t.Helper()
	var idx sql.NullString
	if err := db.QueryRow(`SELECT turn_ids FROM conversations WHERE phone = ?`, phone).Scan(&idx); err != nil {
		t.Fatal(err)
	}
	if !idx.Valid {
		return "NULL"
	}
	return idx.String
}

// loadQuestions returns the first message's text of each of phone's turns.
func loadQuestions(t *testing.T, s *Store, phone string) string {
	t.Helper()
	c, err := s.Load(context.Background(), phone)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, tr := range c.Turns {
		qs = append(qs, tr.Messages[0].Text())
	}
	return strings.Join(qs, ",")
}

func openIndexTest(t *testing.T) (*Store, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, db
}

// TestTurnIndexFollowsSaves: every save writes the conversation's index of
// its turns as they are stored, through new rows, recycled rows, an expiry
// and a Replace.
func TestTurnIndexFollowsSaves(t *testing.T) {
	s, db := openIndexTest(t)
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	now := storetest.Start
	at := func(seq int, d time.Duration) string { return fmt.Sprintf("%d %d\n", seq, now.Add(d).UnixNano()) }
	steps := []struct {
		q, id string
		at    time.Duration
		want  string
	}{
		{"a", "toolu_a", 0, at(1, 0) + " \"toolu_a\"\n"},
		{"b", "", 0, at(2, 0) + " \"toolu_a\"\n\n"},
		{"c", "toolu_c", 0, at(3, 0) + " \"toolu_a\"\n\n \"toolu_c\"\n"},
		{"d", "toolu_a", 0, at(4, 0) + "\n \"toolu_c\"\n \"toolu_a\"\n"}, // a's id left with a
		{"e", "", 2 * time.Hour, at(1, 2*time.Hour) + "\n"},              // expired: a new conversation
	}
	for _, st := range steps {
		if err := s.Append(ctx, "+1", indexTurn(st.q, st.id), now.Add(st.at), lim); err != nil {
			t.Fatalf("Append %s: %v", st.q, err)
		}
		if got := storedIndex(t, db, "+1"); got != st.want {
			t.Fatalf("after %s: turn_ids %q, want %q", st.q, got, st.want)
		}
	}
	c := conversation.Conversation{Phone: "+2", LastActive: now, Turns: []conversation.Turn{indexTurn("x", "toolu_x"), indexTurn("y", "")}}
	if ok, err := s.Replace(ctx, c, time.Hour); !ok || err != nil {
		t.Fatalf("Replace = %v, %v", ok, err)
	}
	if got, want := storedIndex(t, db, "+2"), at(2, 0)+" \"toolu_x\"\n\n"; got != want {
		t.Fatalf("after Replace: turn_ids %q, want %q", got, want)
	}
	if err := s.Append(ctx, "+2", indexTurn("z", "toolu_x"), now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("reusing a replaced turn's id: err = %v, want ErrInvalidTurn", err)
	}
}

// TestTurnIndexOlderVersionSave: a process of the previous version, still
// running on the database after this one migrated it, saves without
// writing the index. Here it restarts an expired conversation of one turn
// with another (the same count and seqs as the index lists); the last
// activity it sets tells the next save not to trust the index.
func TestTurnIndexOlderVersionSave(t *testing.T) {
	s, db := openIndexTest(t)
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	now := storetest.Start
	if err := s.Append(ctx, "+1", indexTurn("a", "toolu_a"), now, lim); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Hour)
	data, err := indexTurn("b", "toolu_b").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// What version 5's Append does on an expired conversation.
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM turns WHERE phone = '+1'`, nil},
		{`INSERT INTO turns (phone, seq, json, sum, tool_ids) VALUES ('+1', 1, ?, ?, '["toolu_b"]')`, []any{data, int64(conversation.Checksum(data))}},
		{`UPDATE conversations SET last_active = ? WHERE phone = '+1'`, []any{later.UnixNano()}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "+1", indexTurn("c", "toolu_b"), later, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("reusing the id of the older version's turn: err = %v, want ErrInvalidTurn", err)
	}
	if err := s.Append(ctx, "+1", indexTurn("c", "toolu_a"), later, lim); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("2 %d\n \"toolu_b\"\n \"toolu_a\"\n", later.UnixNano())
	if got := storedIndex(t, db, "+1"); got != want {
		t.Fatalf("turn_ids %q, want %q", got, want)
	}
}

// TestTurnIndexOutOfDate: a save trusts the index only while it describes
// the stored rows (their number, first and last seq). Rows deleted or added
// by hand, or an index that does not parse, make the save read the turns:
// it checks ids against the rows as they are, applies the cap to them, and
// writes the index anew, or NULL while the rows' seqs have a gap.
func TestTurnIndexOutOfDate(t *testing.T) {
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	now := storetest.Start
	head := func(seq int) string { return fmt.Sprintf("%d %d\n", seq, now.UnixNano()) }
	const toolX = `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_x","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]},{"role":"assistant","content":"ok"}]}`
	type save struct {
		q, id   string
		refused bool
	}
	tests := []struct {
		name      string
		edit      string
		saves     []save
		wantTurns string
		wantIndex string
	}{
		{"row deleted", `DELETE FROM turns WHERE seq = 2`,
			[]save{{"d", "toolu_b", false}}, "a,c,d", "NULL"},
		{"row deleted, then a save", `DELETE FROM turns WHERE seq = 2`,
			[]save{{"d", "toolu_b", false}, {"e", "toolu_c", true}, {"e", "", false}}, "c,d,e", head(5) + " \"toolu_c\"\n \"toolu_b\"\n\n"},
		{"row added", `INSERT INTO turns (phone, seq, json, tool_ids) VALUES ('+1', 4, '` + toolX + `', '["toolu_x"]')`,
			[]save{{"d", "toolu_x", true}}, "a,b,c,x", head(3) + " \"toolu_a\"\n \"toolu_b\"\n \"toolu_c\"\n"},
		{"row added, then a save", `INSERT INTO turns (phone, seq, json) VALUES ('+1', 4, '` + toolX + `')`,
			[]save{{"d", "toolu_x", true}, {"d", "", false}}, "c,x,d", head(5) + " \"toolu_c\"\n \"toolu_x\"\n\n"},
		{"garbage", `UPDATE conversations SET turn_ids = 'not an index'`,
			[]save{{"d", "toolu_b", true}}, "a,b,c", "not an index"},
		{"missing", `UPDATE conversations SET turn_ids = NULL`,
			[]save{{"d", "toolu_c", true}}, "a,b,c", "NULL"},
		{"missing, then a save", `UPDATE conversations SET turn_ids = NULL`,
			[]save{{"d", "toolu_a", false}}, "b,c,d", head(4) + " \"toolu_b\"\n \"toolu_c\"\n \"toolu_a\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, db := openIndexTest(t)
			for _, q := range []string{"a", "b", "c"} {
				if err := s.Append(ctx, "+1", indexTurn(q, "toolu_"+q), now, lim); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.Exec(tt.edit); err != nil {
				t.Fatal(err)
			}
			for _, sv := range tt.saves {
				err := s.Append(ctx, "+1", indexTurn(sv.q, sv.id), now, lim)
				if sv.refused != errors.Is(err, conversation.ErrInvalidTurn) || (!sv.refused && err != nil) {
					t.Fatalf("Append %s with %q: err = %v, want ErrInvalidTurn: %v", sv.q, sv.id, err, sv.refused)
				}
			}
			if got := loadQuestions(t, s, "+1"); got != tt.wantTurns {
				t.Fatalf("turns %s, want %s", got, tt.wantTurns)
			}
			if got := storedIndex(t, db, "+1"); got != tt.wantIndex {
				t.Fatalf("turn_ids %q, want %q", got, tt.wantIndex)
			}
		})
	}
}

// TestUpgradeFromVersion5: a database of schema 5 opens at the current
// version with no turn index; its conversations load as before, and the
// first save of each reads the turns (their tool_ids, or the json of rows
// older than that column) to check the new turn's ids and write the index.
func TestUpgradeFromVersion5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	ctx := context.Background()
	old, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, old, migrations[:5]); err != nil {
		t.Fatal(err)
	}
	now := storetest.Start
	// As version 5 wrote them: a checksum and tool_ids, but for the
	// second row, which is from before those columns.
	var stored [][]byte
	for i, tr := range []conversation.Turn{indexTurn("a", "toolu_a"), indexTurn("b", "toolu_b"), indexTurn("c", "")} {
		data, err := tr.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, data)
		var sum, ids any = int64(conversation.Checksum(data)), `[]`
		switch i {
		case 0:
			ids = `["toolu_a"]`
		case 1:
			sum, ids = nil, nil
		}
		if i == 0 {
			if _, err := old.Exec(`INSERT INTO conversations (phone, last_active) VALUES ('+1', ?)`, now.UnixNano()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := old.Exec(`INSERT INTO turns (phone, seq, json, sum, tool_ids) VALUES ('+1', ?, ?, ?, ?)`, i+1, data, sum, ids); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
	if idx := storedIndex(t, db, "+1"); idx != "NULL" {
		t.Fatalf("turn_ids after the upgrade = %q, want NULL", idx)
	}
	c, err := s.Load(ctx, "+1")
	if err != nil || len(c.Turns) != 3 {
		t.Fatalf("Load = %d turns, %v; want 3", len(c.Turns), err)
	}
	for i, tr := range c.Turns {
		if got, _ := tr.MarshalJSON(); string(got) != string(stored[i]) {
			t.Fatalf("turn %d loads as %s, want the stored %s", i+1, got, stored[i])
		}
	}

	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	for _, id := range []string{"toolu_a", "toolu_b"} {
		if err := s.Append(ctx, "+1", indexTurn("again", id), now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Fatalf("reusing %s of a version 5 row: err = %v, want ErrInvalidTurn", id, err)
		}
	}
	if err := s.Append(ctx, "+1", indexTurn("d", "toolu_d"), now, lim); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("4 %d\n \"toolu_a\"\n \"toolu_b\"\n\n \"toolu_d\"\n", now.UnixNano())
	if idx := storedIndex(t, db, "+1"); idx != want {
		t.Fatalf("turn_ids after the first save = %q, want %q", idx, want)
	}
	if got := loadQuestions(t, s, "+1"); got != "a,b,c,d" {
		t.Fatalf("turns %s, want a,b,c,d", got)
	}
	if err := s.Append(ctx, "+1", indexTurn("e", "toolu_b"), now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("reusing toolu_b through the index: err = %v, want ErrInvalidTurn", err)
	}
}
