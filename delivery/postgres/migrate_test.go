package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/internal/pgtest"
)

// TestMigrateKeepsQueues: the tables of the first schema version, with a
// message waiting and one handled, are upgraded as an Inbox opens them:
// the message waiting is read, unmarked, and can be marked and done; the
// handled one is still a duplicate.
func TestMigrateKeepsQueues(t *testing.T) {
	schema := pgtest.Name(t)
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	all := migrations
	migrations = all[:1]
	err = migrate(context.Background(), pool, schema)
	migrations = all
	if err != nil {
		t.Fatal(err)
	}
	// The rows as the first version's Push and Done write them.
	inbox := tables{schema}.name("inbox")
	for _, stmt := range []string{
		`INSERT INTO ` + inbox + ` (id, sender, body) VALUES ('a0', '+1', '{}'), ('a1', '+1', '{"text":"hi"}')`,
		`UPDATE ` + inbox + ` SET handled_at = now(), body = NULL WHERE id = 'a0'`,
	} {
		if _, err := pool.Exec(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}

	in, err := NewInbox(context.Background(), pool, &InboxOptions{Schema: schema})
	if err != nil {
		t.Fatalf("NewInbox on the first version's tables: %v", err)
	}
	if m, ok := deliverytest.Peek(t, in, "+1"); m.ID != "a1" || string(m.Body) != `{"text":"hi"}` || m.Sending || !ok {
		t.Fatalf("head = %s %s, Sending %v; want a1 unmarked", m.ID, m.Body, m.Sending)
	}
	deliverytest.Sending(t, in, "+1", "a1")
	if m, _ := deliverytest.Peek(t, in, "+1"); !m.Sending {
		t.Error("the message of the first version's tables cannot be marked")
	}
	deliverytest.Done(t, in, "+1", "a1")
	for _, id := range []string{"a0", "a1"} {
		if !deliverytest.Dup(t, in, deliverytest.Msg("+1", id)) {
			t.Errorf("Push of %s, handled: kept, want a duplicate", id)
		}
	}
	var v int
	if err := pool.QueryRow(context.Background(), `SELECT max(version) FROM `+tables{schema}.name("delivery_migrations")).Scan(&v); err != nil || v != len(migrations) {
		t.Errorf("schema version = %d, %v; want %d", v, err, len(migrations))
	}
}
