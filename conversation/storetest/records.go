package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/conversation"
)

// recordTests are the cases of the primitive every store offers
// ([conversation.Store]): versioned records by kind and key, written on
// condition. Each names the rule it checks.
var recordTests = []struct {
	name, rule string
	fn         func(t *testing.T, e *env)
}{
	{"RecordGetMissing", "Get of a key never written is ErrNotFound", testRecordMissing},
	{"RecordRoundTrip", "Put stores the data byte for byte and Get returns it with the version Put gave, never 0", testRecordRoundTrip},
	{"RecordCreateConflict", "Put with version 0 over an existing record is ErrConflict and changes nothing", testRecordCreateConflict},
	{"RecordStaleVersion", "Put with a version that is no longer stored is ErrConflict and changes nothing", testRecordStale},
	{"RecordNewVersion", "a Put gives a version different from the one it replaced, also after a delete and a new record", testRecordNewVersion},
	{"RecordDelete", "Delete on condition: ErrConflict for another version, ErrNotFound for none, 0 deletes any", testRecordDelete},
	{"RecordKindsApart", "the same key in two kinds is two records", testRecordKinds},
	{"RecordListPrefix", "List returns the kind's records whose key starts with the prefix, by key, nothing else", testRecordList},
	{"RecordOddKeys", "keys of any UTF-8, with glob and separator characters, up to MaxKeyLen bytes, are kept apart and listed literally", testRecordOddKeys},
	{"RecordLargeData", "a 1 MiB record round-trips exactly", testRecordLarge},
	{"RecordConcurrent", "conditional writes from two handles on the same storage never lose an update", testRecordConcurrent},
	{"RecordReopen", "records outlive closing and reopening the store", testRecordReopen},
}

func runRecords(t *testing.T, newStorage NewStorage) {
	for _, tt := range recordTests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			defer func() {
				if t.Failed() {
					t.Logf("rule: %s", tt.rule)
				}
			}()
			tt.fn(t, e)
			e.checkInvariants()
		})
	}
}

// kindA and kindB are kinds of no meaning to the domain, for these cases;
// a store must keep any kind it is given.
const kindA, kindB conversation.Kind = "storetest-a", "storetest-b"

func (e *env) put(kind conversation.Kind, key, data string, version int64) int64 {
	e.t.Helper()
	v, err := e.store.Put(ctx(), kind, conversation.Record{Key: key, Data: []byte(data), Version: version}, 0)
	if err != nil {
		e.t.Fatalf("Put(%s, %q, version %d): %v", kind, key, version, err)
	}
	if v == 0 {
		e.t.Fatalf("Put(%s, %q) gave version 0", kind, key)
	}
	return v
}

// stored checks that kind's key holds data at version (0: any version).
func (e *env) stored(kind conversation.Kind, key, data string, version int64) {
	e.t.Helper()
	r, err := e.store.Get(ctx(), kind, key)
	if err != nil {
		e.t.Fatalf("Get(%s, %q): %v", kind, key, err)
	}
	if string(r.Data) != data || r.Key != key || (version != 0 && r.Version != version) {
		e.t.Fatalf("Get(%s, %q) = {%q %.80q v%d}, want {%q %.80q v%d}", kind, key, r.Key, r.Data, r.Version, key, data, version)
	}
}

func (e *env) absent(kind conversation.Kind, key string) {
	e.t.Helper()
	if r, err := e.store.Get(ctx(), kind, key); !errors.Is(err, conversation.ErrNotFound) {
		e.t.Fatalf("Get(%s, %q) = %q, %v; want ErrNotFound", kind, key, r.Data, err)
	}
}

func testRecordMissing(t *testing.T, e *env) {
	e.absent(kindA, "nobody")
	e.absent(conversation.Conversations, "+14155551234")
}

func testRecordRoundTrip(t *testing.T, e *env) {
	data := `{"text":"caf\u00e9 🌮 \"q\" <b>&</b>","n":[1.50,2e3,null]}`
	v := e.put(kindA, "k", data, 0)
	e.stored(kindA, "k", data, v)
}

func testRecordCreateConflict(t *testing.T, e *env) {
	v := e.put(kindA, "k", `"first"`, 0)
	_, err := e.store.Put(ctx(), kindA, conversation.Record{Key: "k", Data: []byte(`"second"`)}, 0)
	if !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Put with version 0 over a record = %v, want ErrConflict", err)
	}
	e.stored(kindA, "k", `"first"`, v)
}

func testRecordStale(t *testing.T, e *env) {
	v1 := e.put(kindA, "k", `1`, 0)
	v2 := e.put(kindA, "k", `2`, v1)
	_, err := e.store.Put(ctx(), kindA, conversation.Record{Key: "k", Data: []byte(`3`), Version: v1}, 0)
	if !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Put with a stale version = %v, want ErrConflict", err)
	}
	e.stored(kindA, "k", `2`, v2)
	if _, err := e.store.Put(ctx(), kindA, conversation.Record{Key: "new", Data: []byte(`1`), Version: v2}, 0); !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Put of a missing record with a version = %v, want ErrConflict", err)
	}
	e.absent(kindA, "new")
}

func testRecordNewVersion(t *testing.T, e *env) {
	v1 := e.put(kindA, "k", `"a"`, 0)
	v2 := e.put(kindA, "k", `"b"`, v1)
	if v2 == v1 {
		t.Fatalf("two values of one record got the same version %d", v1)
	}
	if err := e.store.Delete(ctx(), kindA, "k", v2); err != nil {
		t.Fatal(err)
	}
	// A writer that read "a" at v1, or "b" at v2, must not overwrite "c".
	v3 := e.put(kindA, "k", `"c"`, 0)
	if v3 == v1 || v3 == v2 {
		t.Fatalf("a record made after a delete got a version (%d) of a value before it (%d, %d)", v3, v1, v2)
	}
}

func testRecordDelete(t *testing.T, e *env) {
	v1 := e.put(kindA, "k", `1`, 0)
	v2 := e.put(kindA, "k", `2`, v1)
	if err := e.store.Delete(ctx(), kindA, "k", v1); !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Delete with a stale version = %v, want ErrConflict", err)
	}
	e.stored(kindA, "k", `2`, v2)
	if err := e.store.Delete(ctx(), kindA, "k", v2); err != nil {
		t.Fatalf("Delete with the stored version: %v", err)
	}
	e.absent(kindA, "k")
	if err := e.store.Delete(ctx(), kindA, "k", 0); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Delete of a missing record = %v, want ErrNotFound", err)
	}
	e.put(kindA, "k", `3`, 0)
	if err := e.store.Delete(ctx(), kindA, "k", 0); err != nil {
		t.Fatalf("Delete with version 0: %v", err)
	}
	e.absent(kindA, "k")
}

func testRecordKinds(t *testing.T, e *env) {
	e.put(kindA, "k", `"a"`, 0)
	e.put(kindB, "k", `"b"`, 0)
	if err := e.store.Delete(ctx(), kindA, "k", 0); err != nil {
		t.Fatal(err)
	}
	e.absent(kindA, "k")
	e.stored(kindB, "k", `"b"`, 0)
}

func testRecordList(t *testing.T, e *env) {
	for _, k := range []string{"2026-02-25/+2", "2026-02-24/+1", "2026-02-24/+2", "2026-02-2", "2026-03-01/+1"} {
		e.put(kindA, k, fmt.Sprintf("%q", k), 0)
	}
	e.put(kindB, "2026-02-24/+3", `"other kind"`, 0)
	check := func(prefix string, want ...string) {
		t.Helper()
		recs, err := e.store.List(ctx(), kindA, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var got []string
		for _, r := range recs {
			if string(r.Data) != fmt.Sprintf("%q", r.Key) || r.Version == 0 {
				t.Fatalf("List(%q) gave %q with data %q, version %d", prefix, r.Key, r.Data, r.Version)
			}
			got = append(got, r.Key)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
	check("", "2026-02-2", "2026-02-24/+1", "2026-02-24/+2", "2026-02-25/+2", "2026-03-01/+1")
	check("2026-02-24/", "2026-02-24/+1", "2026-02-24/+2")
	check("2026-02-2", "2026-02-2", "2026-02-24/+1", "2026-02-24/+2", "2026-02-25/+2")
	check("2027")
}

func testRecordOddKeys(t *testing.T, e *env) {
	keys := []string{"*", "?", "[a]", "a*", "a:b", "a/b", `a\b`, "%41", "ü 🌮", "a b", strings.Repeat("é", conversation.MaxKeyLen/2)}
	for i, k := range keys {
		e.put(kindA, k, fmt.Sprint(i), 0)
	}
	for i, k := range keys {
		e.stored(kindA, k, fmt.Sprint(i), 0)
	}
	for _, prefix := range []string{"*", "?", "[", "a*", `a\`} {
		recs, err := e.store.List(ctx(), kindA, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if !strings.HasPrefix(r.Key, prefix) {
				t.Fatalf("List(%q) gave %q: a prefix is literal, not a pattern", prefix, r.Key)
			}
		}
		want := 0
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want++
			}
		}
		if len(recs) != want {
			t.Fatalf("List(%q) gave %d records, want %d", prefix, len(recs), want)
		}
	}
}

func testRecordLarge(t *testing.T, e *env) {
	big, _ := json.Marshal(strings.Repeat("0123456789abcdef", 1<<16))
	v := e.put(kindA, "big", string(big), 0)
	r, err := e.store.Get(ctx(), kindA, "big")
	if err != nil || !bytes.Equal(r.Data, big) || r.Version != v {
		t.Fatalf("a 1 MiB record did not round-trip: %v", err)
	}
}

func testRecordConcurrent(t *testing.T, e *env) {
	second, err := e.open()
	if err != nil {
		t.Fatalf("open a second store on the same storage: %v", err)
	}
	t.Cleanup(func() {
		if second != e.store {
			second.Close()
		}
	})
	stores := []conversation.Store{e.store, second}
	const workers, adds = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := stores[w%2]
			for range adds {
				for {
					r, err := s.Get(ctx(), kindA, "counter")
					if err != nil && !errors.Is(err, conversation.ErrNotFound) {
						errs <- err
						return
					}
					var n int
					if r.Data != nil {
						json.Unmarshal(r.Data, &n)
					}
					_, err = s.Put(ctx(), kindA, conversation.Record{Key: "counter", Data: fmt.Append(nil, n+1), Version: r.Version}, 0)
					if err == nil {
						break
					}
					if !errors.Is(err, conversation.ErrConflict) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent conditional writes: %v", err)
	}
	e.stored(kindA, "counter", fmt.Sprint(workers*adds), 0)
}

func testRecordReopen(t *testing.T, e *env) {
	v := e.put(kindA, "k", `"kept"`, 0)
	e.reopen(nil)
	e.stored(kindA, "k", `"kept"`, v)
}

// checkInvariants checks what every store holds after any case: each record
// of the domain's kinds is one Memory writes ([conversation.CheckRecord]),
// within the largest turn cap the case used.
func (e *env) checkInvariants() {
	e.t.Helper()
	if e.store == nil || e.t.Failed() {
		return
	}
	lim := conversation.Limits{MaxTurns: e.maxTurns}
	for _, kind := range conversation.Kinds {
		recs, err := e.store.List(ctx(), kind, "")
		if err != nil {
			e.t.Fatalf("invariants: List(%s): %v", kind, err)
		}
		for _, r := range recs {
			if err := conversation.CheckRecord(kind, r, lim); err != nil {
				e.t.Errorf("invariants: %s %q: %v", kind, r.Key, err)
			}
		}
	}
}
