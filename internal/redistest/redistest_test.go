package redistest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/redistest"
)

// recorder is a testing.TB that records what a helper skips or reports
// instead of ending the test that runs it.
type recorder struct {
	testing.TB
	skipped string
	errors  []string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// run calls fn with r on a goroutine of its own, so that a Skip ends only
// fn, and reports whether fn returned normally.
func (r *recorder) run(fn func(testing.TB)) (returned bool) {
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		fn(r)
		ok = true
	}()
	return <-done
}

// Without MOMBOT_TEST_REDIS_URL every helper skips, and the message says
// which variable to set and to what.
func TestSkipsWithoutURL(t *testing.T) {
	t.Setenv(redistest.EnvURL, "")
	for name, fn := range map[string]func(testing.TB){
		"URL":    func(tb testing.TB) { redistest.URL(tb) },
		"Client": func(tb testing.TB) { redistest.Client(tb) },
		"Prefix": func(tb testing.TB) { redistest.Prefix(tb) },
	} {
		r := &recorder{TB: t}
		if r.run(fn) {
			t.Errorf("%s returned without MOMBOT_TEST_REDIS_URL instead of skipping", name)
		}
		if !strings.Contains(r.skipped, "MOMBOT_TEST_REDIS_URL") || !strings.Contains(r.skipped, "redis://") {
			t.Errorf("%s skipped with %q, want a message naming MOMBOT_TEST_REDIS_URL and an example URL", name, r.skipped)
		}
	}
}

// A prefix is the test's own: two differ, and when the test that took one
// ends, its keys are gone and the keys of other prefixes are not.
func TestPrefixCleansOnlyItsKeys(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	outer := redistest.Prefix(t)
	if err := rdb.Set(ctx, outer+"kept", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var inner string
	t.Run("inner", func(t *testing.T) {
		inner = redistest.Prefix(t)
		for _, k := range []string{"a", "b", "c:d"} {
			if err := rdb.Set(ctx, inner+k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if inner == outer || !strings.HasPrefix(inner, "mombot-test:") || !strings.HasSuffix(inner, ":") {
		t.Fatalf("prefixes %q and %q: want two different mombot-test:...: prefixes", outer, inner)
	}
	if n, err := rdb.Exists(ctx, inner+"a", inner+"b", inner+"c:d").Result(); err != nil || n != 0 {
		t.Errorf("%d keys of the ended test are left (%v), want 0", n, err)
	}
	if n, err := rdb.Exists(ctx, outer+"kept").Result(); err != nil || n != 1 {
		t.Errorf("the key of another prefix was removed (%d, %v)", n, err)
	}
}

// DeleteKeys takes its prefix literally: glob characters in it match only
// themselves. An empty prefix, which would match every key, deletes
// nothing and is reported.
func TestDeleteKeysLiteralPrefix(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	base := redistest.Prefix(t)
	for _, k := range []string{"[ab]*x", "ax", "bx"} {
		if err := rdb.Set(ctx, base+k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	redistest.DeleteKeys(t, rdb, base+"[ab]*")
	if n, _ := rdb.Exists(ctx, base+"[ab]*x").Result(); n != 0 {
		t.Errorf("the key under the literal prefix is still there")
	}
	if n, _ := rdb.Exists(ctx, base+"ax", base+"bx").Result(); n != 2 {
		t.Errorf("%d of the keys the prefix matches only as a pattern are left, want 2", n)
	}

	r := &recorder{TB: t}
	r.run(func(tb testing.TB) { redistest.DeleteKeys(tb, rdb, "") })
	if len(r.errors) != 1 {
		t.Errorf("DeleteKeys with an empty prefix reported %q, want one error", r.errors)
	}
	if n, _ := rdb.Exists(ctx, base+"ax").Result(); n != 1 {
		t.Errorf("DeleteKeys with an empty prefix deleted keys")
	}
}
