package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// TestTurnIndexRoundTrip: whatever its ids hold (spaces, quotes, newlines,
// backslashes, other scripts), an index reads back as written.
func TestTurnIndexRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		idx  turnIndex
		text string
	}{
		{"empty", turnIndex{}, "0\n"},
		{"no ids", turnIndex{entry(1, nil), entry(2, nil)}, "2\n\n\n"},
		{"ids", turnIndex{entry(7, []string{"toolu_01A"}), entry(8, nil), entry(9, []string{"toolu_01B", "toolu_01C"})},
			"9\n \"toolu_01A\"\n\n \"toolu_01B\" \"toolu_01C\"\n"},
		{"odd ids", turnIndex{entry(3, []string{`a "b" c`, "line\nbreak", `back\slash`, "x y", "ünï", " "})}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.idx.String()
			if tt.text != "" && text != tt.text {
				t.Fatalf("String() = %q, want %q", text, tt.text)
			}
			got, err := parseTurnIndex(text)
			if err != nil {
				t.Fatalf("parseTurnIndex(%q): %v", text, err)
			}
			if !slices.Equal(got, tt.idx) {
				t.Fatalf("parseTurnIndex(%q) = %q, want %q", text, got, tt.idx)
			}
			for i, e := range got {
				ids, err := e.toolIDs(nil)
				want, _ := tt.idx[i].toolIDs(nil)
				if err != nil || !slices.Equal(ids, want) {
					t.Fatalf("entry %d: ids %q, %v; want %q", i, ids, err, want)
				}
			}
		})
	}
	odd := turnIndex{entry(3, []string{`a "b" c`, "line\nbreak"})}
	if ids, _ := odd[0].toolIDs(nil); !slices.Equal(ids, []string{`a "b" c`, "line\nbreak"}) {
		t.Fatalf("ids = %q", ids)
	}
}

// TestTurnIndexMalformed: text that turnIndex.String did not write is
// refused, so that a save reads the turns instead of trusting it.
func TestTurnIndexMalformed(t *testing.T) {
	for _, text := range []string{
		"",                       // not even the newest seq
		"1",                      // no newline
		"1\n",                    // no turns: then the newest seq is 0
		"x\n",                    // not a seq
		"-1\n",                   // nor this
		"01\n\n",                 // nor this, as written
		"+1\n\n",                 // nor this
		"1 \n",                   // nor this
		"99999999999999999999\n", // overflows int64
		"1\n\n\n",                // two turns up to seq 1: seqs start at 1
		"2\n \"a\"",              // a line without its newline
		"1\n toolu_01A\n",        // unquoted id
		"1\n\"a\"\n",             // no space before the id
		"1\n \"toolu_01A\n",      // unterminated
		"1\n \"a\"\"b\"\n",       // no space between ids
		"1\n  \"a\"\n",           // two spaces
		"1\n \"a\" \n",           // trailing space
		"1\n `a`\n",              // another quoting
		"1\n 'a'\n",              // a rune
	} {
		if x, err := parseTurnIndex(text); err == nil {
			t.Errorf("parseTurnIndex(%q) = %q, want an error", text, x)
		}
	}
}

// FuzzParseTurnIndex: the index is read from the database, where a hand
// edit may have put anything; parsing never panics, and what parses has
// consecutive seqs from 1 on and is written back as it was read.
func FuzzParseTurnIndex(f *testing.F) {
	for _, s := range []string{"", "0\n", "1\n\n", "9\n \"toolu_01A\"\n\n \"b\" \"c\"\n", "3\n \"a \\\"b\\\" c\" \"line\\nbreak\"\n", "1\n `a`\n", "1\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := parseTurnIndex(s)
		if err != nil {
			return
		}
		if !x.consecutive() || (len(x) > 0 && x[0].seq < 1) {
			t.Fatalf("%q parsed as %q: seqs not consecutive from 1 on", s, x)
		}
		if got := x.String(); got != s {
			t.Fatalf("%q parsed as %q, which is written as %q", s, x, got)
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
	steps := []struct {
		q, id string
		at    time.Duration
		want  string
	}{
		{"a", "toolu_a", 0, "1\n \"toolu_a\"\n"},
		{"b", "", 0, "2\n \"toolu_a\"\n\n"},
		{"c", "toolu_c", 0, "3\n \"toolu_a\"\n\n \"toolu_c\"\n"},
		{"d", "toolu_a", 0, "4\n\n \"toolu_c\"\n \"toolu_a\"\n"}, // a's id left with a
		{"e", "", 2 * time.Hour, "1\n\n"},                        // expired: a new conversation
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
	if got, want := storedIndex(t, db, "+2"), "2\n \"toolu_x\"\n\n"; got != want {
		t.Fatalf("after Replace: turn_ids %q, want %q", got, want)
	}
	if err := s.Append(ctx, "+2", indexTurn("z", "toolu_x"), now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("reusing a replaced turn's id: err = %v, want ErrInvalidTurn", err)
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
			[]save{{"d", "toolu_b", false}, {"e", "toolu_c", true}, {"e", "", false}}, "c,d,e", "5\n \"toolu_c\"\n \"toolu_b\"\n\n"},
		{"row added", `INSERT INTO turns (phone, seq, json, tool_ids) VALUES ('+1', 4, '` + toolX + `', '["toolu_x"]')`,
			[]save{{"d", "toolu_x", true}}, "a,b,c,x", "3\n \"toolu_a\"\n \"toolu_b\"\n \"toolu_c\"\n"},
		{"row added, then a save", `INSERT INTO turns (phone, seq, json) VALUES ('+1', 4, '` + toolX + `')`,
			[]save{{"d", "toolu_x", true}, {"d", "", false}}, "c,x,d", "5\n \"toolu_c\"\n \"toolu_x\"\n\n"},
		{"garbage", `UPDATE conversations SET turn_ids = 'not an index'`,
			[]save{{"d", "toolu_b", true}}, "a,b,c", "not an index"},
		{"missing", `UPDATE conversations SET turn_ids = NULL`,
			[]save{{"d", "toolu_c", true}}, "a,b,c", "NULL"},
		{"missing, then a save", `UPDATE conversations SET turn_ids = NULL`,
			[]save{{"d", "toolu_a", false}}, "b,c,d", "4\n \"toolu_b\"\n \"toolu_c\"\n \"toolu_a\"\n"},
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
	want := "4\n \"toolu_a\"\n \"toolu_b\"\n\n \"toolu_d\"\n"
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
