package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestQueryPlans checks that no statement that works on one phone, nor the
// sweep, scans a whole table: their cost must not grow with the number of
// phones stored. List reads every conversation by design.
func TestQueryPlans(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "mombot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name  string
		query string
		args  []any
	}{
		{"load", queryLoad, []any{"+1"}},
		{"last active", queryLastActive, []any{"+1"}},
		{"save state", querySaveState, []any{"+1"}},
		{"insert conversation", queryInsertConv, []any{"+1", 1, "1\n"}},
		{"touch conversation", queryTouchConv, []any{"+1", 1, "1\n"}},
		{"move turn", queryMoveTurn, []any{"+1", 11, "{}", 1, "[]", 1}},
		{"delete turns before", queryDeleteTurnsBefore, []any{"+1", 1}},
		{"turn index", queryTurnIndex, []any{"+1"}},
		{"delete turns", queryDeleteTurns, []any{"+1"}},
		{"insert turn", queryInsertTurn, []any{"+1", "{}", 1, "[]"}},
		{"recycle turn", queryRecycleTurn, []any{"+1", "{}", 1, "[]", 9}},
		{"insert turn at", queryInsertTurnAt, []any{"+1", 1, "{}", 1, "[]"}},
		{"tool ids", queryToolIDs, []any{"+1", 9}},
		{"cap turns", queryCapTurns, []any{"+1", 9}},
		{"delete", queryDelete, []any{"+1"}},
		{"expire", queryExpire, []any{"+1", 1}},
		{"sweep", querySweep, []any{1, sweepBatch}},
		{"add usage", queryAddUsage, []any{"+1", "2026-02-24", 1, 1, 1, 1, 1, 1, 1}},
		{"usage since", queryUsageSince, []any{"2026-02-24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.db.Query("EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notUsed int
				var detail string
				if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN ") && step != "SCAN CONSTANT ROW" {
					t.Fatalf("plan scans a table:\n%s", strings.Join(plan, "\n"))
				}
			}
		})
	}
}
