package conversation

import (
	"context"
	"errors"
	"time"
)

// The errors a [Store] returns. Backends translate their driver's errors
// into these at their boundary.
var (
	// ErrNotFound: there is no record under the key (also returned by
	// [Memory.Clear] when a phone has no stored conversation).
	ErrNotFound = errors.New("no conversation for this phone")
	// ErrConflict: the record's stored version is not the one the write
	// was conditioned on; another writer came first and nothing was
	// changed.
	ErrConflict = errors.New("record changed since it was read")
	// ErrReadOnly: the store was opened read-only.
	ErrReadOnly = errors.New("store is read-only")
)

// Kind names a kind of record. Each kind is its own key space.
type Kind string

// The kinds of record mombot keeps. A new kind of per-person or per-family
// data is a new Kind and a type in this package that encodes it; stores
// need no change.
const (
	// Conversations are keyed by phone; the data is the conversation
	// object of the original design's conversations.json.
	Conversations Kind = "conversations"
	// Recent holds a phone's recent messages by id ([RecentMessage]).
	Recent Kind = "recent"
	// UsageDays holds one phone's usage on one UTC day, keyed
	// "YYYY-MM-DD/phone" ([DailyUsage]).
	UsageDays Kind = "usage"
	// Notes holds a family's notes, keyed by the family's id
	// ([Family]): one record per family, live notes and the content-free
	// tombstones of gone ones.
	Notes Kind = "notes"
	// Summaries holds a person's running summary of the turns that left
	// their conversation, keyed by phone ([RunningSummary]), with the turns
	// still waiting to be folded into it.
	Summaries Kind = "summaries"
	// Lists holds the family's shared lists, one record under [ListsKey]
	// ([FamilyLists]).
	Lists Kind = "lists"
)

// Kinds lists every kind, in the order a copy of a whole store takes them.
var Kinds = []Kind{Conversations, Recent, UsageDays, Notes, Summaries, Lists}

// Record is one stored value.
type Record struct {
	// Key identifies the record within its kind: 1 to 256 bytes of UTF-8.
	Key string
	// Data is a JSON value, stored and returned byte for byte.
	Data []byte
	// Version is the store's stamp of the stored value; a value that was
	// never stored has version 0. A write conditioned on a version
	// succeeds only while the stored record still carries it.
	Version int64
}

// Store persists records: versioned JSON values by kind and key. It decides
// nothing about them: the policy (expiry, the turn cap, validity) is
// [Memory]'s, which reads a record, decides, and writes it back on the
// condition that nobody wrote it in between.
//
// Implementations are safe for concurrent use by many goroutines and, where
// their storage is shared, by many processes. Once a write returns nil it is
// durable, as far as the backend promises durability; on error nothing is
// changed.
type Store interface {
	// Get returns the record of kind under key, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, kind Kind, key string) (Record, error)

	// Put stores rec.Data under rec.Key if the stored version is still
	// rec.Version (0: no record is stored), in one atomic step, and
	// returns the new version, which is never 0 and differs from the one
	// it replaces. Otherwise it returns an error wrapping ErrConflict and
	// changes nothing. keep > 0 lets the store drop the record once keep
	// has passed without a write (its own housekeeping; the policy does
	// not rely on it); 0 keeps it until it is deleted.
	Put(ctx context.Context, kind Kind, rec Record, keep time.Duration) (version int64, err error)

	// Delete removes the record of kind under key if its version is
	// version, or whatever version it has when version is 0. It returns
	// an error wrapping ErrNotFound when there is none and ErrConflict
	// when it has another version.
	Delete(ctx context.Context, kind Kind, key string, version int64) error

	// List returns every record of kind whose key starts with prefix,
	// ordered by key.
	List(ctx context.Context, kind Kind, prefix string) ([]Record, error)

	// Scrub makes the data of deleted and overwritten records
	// unrecoverable from the storage the store controls, as far as it
	// can: SQLite overwrites freed pages and checkpoints its log; a file
	// store leaves no old copy of a file behind. It is called after a
	// person asks to forget something. What lives outside the store's
	// control (a Redis server's append-only file, a database's backups)
	// is the operator's; the backend's doc says what that is.
	Scrub(ctx context.Context) error

	// Close releases the store's resources. The store is unusable after.
	Close() error
}

// MaxKeyLen is the longest record key a store must accept, in bytes.
const MaxKeyLen = 256
