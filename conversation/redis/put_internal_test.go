package redis

import (
	"context"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/redistest"
)

// TestPutScriptNeedsTheNewData: should the HSET of a Put's transaction
// fail, its script refuses to rename the new hash, which holds no data,
// over the record: the record stays as it was.
func TestPutScriptNeedsTheNewData(t *testing.T) {
	prefix, rdb, ctx := redistest.Prefix(t), redistest.Client(t), context.Background()
	rk, tmp := prefix+"conversations:+1", prefix+tempKey+"x"
	if err := rdb.HSet(ctx, rk, dataField, "old", versionField, "1").Err(); err != nil {
		t.Fatal(err)
	}
	err := putScript.Eval(ctx, rdb, []string{rk, prefix + counterKey, tmp}, 1, 0).Err()
	if err == nil || !strings.Contains(err.Error(), "the new data was not written") {
		t.Fatalf("the script without the new data: err = %v, want it refused", err)
	}
	if got, err := rdb.HGetAll(ctx, rk).Result(); err != nil || len(got) != 2 || got[dataField] != "old" || got[versionField] != "1" {
		t.Fatalf("the record is now %q, %v; want it as it was", got, err)
	}
	if n, _ := rdb.Exists(ctx, tmp, prefix+counterKey).Result(); n != 0 {
		t.Fatalf("%d keys written besides the record", n)
	}
}
