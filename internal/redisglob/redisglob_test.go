package redisglob_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mombot/mombot/internal/redisglob"
	"github.com/mombot/mombot/internal/redistest"
)

func TestPrefix(t *testing.T) {
	for _, tt := range []struct{ prefix, want string }{
		{"", "*"},
		{"mombot:conv:", "mombot:conv:*"},
		{`a*b?c[d]e\f^g-h`, `a\*b\?c\[d\]e\\f\^g\-h*`},
		{"é:", "é:*"},
	} {
		if got := redisglob.Prefix(tt.prefix); got != tt.want {
			t.Errorf("Prefix(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

// TestPrefixOnRedis: Redis's SCAN with the pattern finds the keys under a
// prefix full of glob characters, and none that the unescaped glob would
// also match.
func TestPrefixOnRedis(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	base := redistest.Prefix(t)
	prefix := base + `[ab]*?\-^:`
	want := []string{prefix + "1", prefix + "2"}
	for _, k := range append([]string{base + "a:1", base + "azzQ-^:1", base + `[ab]x?\-^:1`}, want...) {
		if err := rdb.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	iter := rdb.Scan(ctx, 0, redisglob.Prefix(prefix), 1000).Iterator()
	for iter.Next(ctx) {
		got = append(got, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("SCAN MATCH %q found %q, want %q", redisglob.Prefix(prefix), got, want)
	}
}
