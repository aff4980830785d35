package assistant

import (
	"maps"
	"slices"
	"testing"

	"github.com/mombot/mombot/assistant/anthropictest"
)

// The minimum cacheable prompt length of each model is written twice on
// purpose: once here, where it decides which breakpoints are worth placing,
// and once in the fake API (anthropictest), where it decides what the fake
// caches, so that the fake does not simply echo the code it tests. The
// values come from the table in Anthropic's prompt caching guide, section
// "Cache limitations"
// (https://platform.claude.com/docs/en/build-with-claude/prompt-caching);
// when the guide changes, both tables change, and this test fails until
// they agree again: for every model either one lists, pinned to a date or
// not, and for a model neither knows.
func TestMinCacheableTokensMatchesTheFake(t *testing.T) {
	ours := slices.Sorted(maps.Keys(minCacheable))
	fakes := anthropictest.CacheMinimumModels()
	if len(ours) == 0 || len(fakes) == 0 {
		t.Fatalf("a table is empty: %d models here, %d in the fake", len(ours), len(fakes))
	}
	models := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ours), fakes...))))
	for _, m := range append(models, "claude-unknown-9") {
		for _, name := range []string{m, m + "-20260224"} {
			if got, fake := MinCacheableTokens(name), anthropictest.MinCacheableTokens(name); got != fake {
				t.Errorf("MinCacheableTokens(%q) = %d here, %d in the fake API: the tables drifted", name, got, fake)
			}
		}
	}
	for _, m := range models {
		if !slices.Contains(ours, m) {
			t.Errorf("%s is in the fake's table only", m)
		}
		if !slices.Contains(fakes, m) {
			t.Errorf("%s is in the assistant's table only", m)
		}
	}
}
