package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

// The versions before the list (list.go) kept a conversation in three keys
// (format 1), which this version reads and moves over:
//
//	<prefix>last:<phone>    string: last activity, Unix microseconds
//	<prefix>turns:<phone>   list: the turns as JSON, oldest first, each
//	                        behind a header member (turns.go)
//	<prefix>ids:<phone>     list: each turn's checksum and tool_use ids, hex
//
// A load that finds neither hash nor list reads them; the first save after
// the upgrade moves the turns that stay into the hash and deletes the three
// keys, in the append script, so that a conversation is in one layout or
// the other at every instant; Expire, Delete, Replace and List know every
// layout. The keys carried the conversation's TTL, so that an upgrade
// leaves none of them after the inactivity timeout.

// loadOlder reads phone's conversation when its hash was found without a
// head: in one MULTI/EXEC, the hash again (a save may have moved the
// conversation over since), the previous version's list (list.go) and the
// oldest layout's last activity and turns. A list key of another type is
// passed over.
func (s *Store) loadOlder(ctx context.Context, phone string) (conversation.Conversation, error) {
	var hashCmd *goredis.MapStringStringCmd
	var listCmd, turnsCmd *goredis.StringSliceCmd
	var lastCmd *goredis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		hashCmd = p.HGetAll(ctx, s.chatKey(phone))
		listCmd = p.LRange(ctx, s.listKey(phone), 0, -1)
		lastCmd = p.Get(ctx, s.lastKey(phone))
		turnsCmd = p.LRange(ctx, s.turnsKey(phone), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) && !goredis.HasErrorPrefix(err, "WRONGTYPE") {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	if err := hashCmd.Err(); err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	var pairs [][]byte
	for k, v := range hashCmd.Val() {
		pairs = append(pairs, []byte(k), []byte(v))
	}
	if c, ok := s.fromHash(ctx, phone, pairs); ok {
		return c, nil
	}
	if c, ok := s.fromList(ctx, phone, byteSlices(listCmd.Val())); ok {
		return c, nil
	}
	lastVal, err := lastCmd.Result()
	if errors.Is(err, goredis.Nil) {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", conversation.ErrNotFound)
	}
	if err == nil {
		err = turnsCmd.Err()
	}
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	last, ok := parseMicros(lastVal)
	if !ok {
		s.log.WarnContext(ctx, "redis: stored last activity is not a number; the conversation counts as expired",
			"phone", maskPhone(phone))
	}
	r := newTurnReader(phone, last, len(turnsCmd.Val()))
	for _, v := range turnsCmd.Val() {
		r.add(nil, []byte(v))
	}
	return s.repaired(ctx, r), nil
}

func byteSlices(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
