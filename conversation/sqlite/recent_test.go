package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRecentQueryPlans: the statements of the recent messages reach their
// rows through an index, so that none costs more with more people stored.
func TestRecentQueryPlans(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "mombot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []struct {
		name  string
		query string
		args  []any
	}{
		{"remember", queryRememberRecent, []any{"+1", "wamid.1", "user", "x", 1}},
		{"prune", queryPruneRecent, []any{1}},
		{"cap", queryCapRecent, []any{"+1", 500}},
		{"recall", queryRecallRecent, []any{"+1", "wamid.1"}},
		{"forget", queryForgetRecent, []any{"+1"}},
	} {
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q.query, q.args...)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && step != "SCAN CONSTANT ROW" {
				t.Errorf("%s: the plan scans a table:\n%s", q.name, strings.Join(plan, "\n"))
			}
		}
	}
}
