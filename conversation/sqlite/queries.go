package sqlite

// The statements of the store's operations. Every one that takes a phone
// reaches its rows through the primary key indexes, and the sweep through
// conversations_last_active, so none costs more with more phones stored;
// TestQueryPlans holds them to that.
const (
	// queryLoad reads a conversation and its turns in one statement, so
	// from one snapshot: a save committed meanwhile is seen whole or not
	// at all. A conversation without turns gives one row, json NULL.
	queryLoad = `
		SELECT c.last_active, t.json, t.sum
		FROM conversations c LEFT JOIN turns t ON t.phone = c.phone
		WHERE c.phone = ?1
		ORDER BY t.seq`

	queryLastActive = `SELECT last_active FROM conversations WHERE phone = ?1`

	// querySaveState is what a save reads: the conversation's last
	// activity, its turn index (see turnIndex), and the number, lowest
	// and highest seq of its turn rows, which tell whether the index
	// describes them. Those come from the primary key's index alone,
	// whose page the save writes anyway.
	querySaveState = `
		SELECT c.last_active, c.turn_ids, count(t.seq), min(t.seq), max(t.seq)
		FROM conversations c LEFT JOIN turns t ON t.phone = c.phone
		WHERE c.phone = ?1`

	queryInsertConv  = `INSERT INTO conversations (phone, last_active, turn_ids) VALUES (?1, ?2, ?3)`
	queryTouchConv   = `UPDATE conversations SET last_active = ?2, turn_ids = ?3 WHERE phone = ?1`
	queryDeleteTurns = `DELETE FROM turns WHERE phone = ?1`

	// queryInsertTurn adds a turn after the phone's last and returns its
	// seq.
	queryInsertTurn = `
		INSERT INTO turns (phone, seq, json, sum, tool_ids)
		VALUES (?1, coalesce((SELECT max(seq) FROM turns WHERE phone = ?1), 0) + 1, ?2, ?3, ?4)
		RETURNING seq`

	// queryMoveTurn rewrites the turn at seq ?6 in place as the turn at
	// seq ?2: how a save into a full conversation whose turn index is
	// current recycles the row that the cap drops (see queryRecycleTurn).
	queryMoveTurn = `
		UPDATE turns SET seq = ?2, json = ?3, sum = ?4, tool_ids = ?5
		WHERE phone = ?1 AND seq = ?6`

	// queryDeleteTurnsBefore deletes the turns older than seq ?2.
	queryDeleteTurnsBefore = `DELETE FROM turns WHERE phone = ?1 AND seq < ?2`

	// queryRecycleTurn turns the oldest row that the cap drops into the
	// new turn, in place: the newest of those beyond the ?5 newest, given
	// the next seq. Rewriting a row where it is costs a save fewer pages
	// (so WAL frames) than inserting a row and deleting one: the row's
	// page is written where it was, and no page goes to the free list and
	// comes back. It changes no row when there are ?5 turns or fewer.
	queryRecycleTurn = `
		UPDATE turns SET
			seq = (SELECT max(seq) FROM turns WHERE phone = ?1) + 1,
			json = ?2, sum = ?3, tool_ids = ?4
		WHERE phone = ?1 AND seq = (
			SELECT seq FROM turns WHERE phone = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?5)`

	queryInsertTurnAt = `INSERT INTO turns (phone, seq, json, sum, tool_ids) VALUES (?1, ?2, ?3, ?4, ?5)`

	// queryTurnIndex reads what a conversation's turn index is made of,
	// to write it anew when it is missing or out of date: each turn's seq
	// and tool_ids, and the json of those that predate that column.
	queryTurnIndex = `
		SELECT seq, tool_ids, CASE WHEN tool_ids IS NULL THEN json END
		FROM turns WHERE phone = ?1
		ORDER BY seq`

	// queryToolIDs returns the tool_use ids of the newest ?2 turns (all
	// with -1), and the json of those that predate the tool_ids column.
	queryToolIDs = `
		SELECT tool_ids, CASE WHEN tool_ids IS NULL THEN json END
		FROM turns WHERE phone = ?1
		ORDER BY seq DESC LIMIT ?2`

	// queryCapTurns keeps the newest ?2+1 turns: it deletes those older
	// than the (?2+1)-th newest. With fewer turns the subquery is NULL and
	// nothing is deleted.
	queryCapTurns = `
		DELETE FROM turns WHERE phone = ?1 AND seq < (
			SELECT seq FROM turns WHERE phone = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)`

	// The deletes of conversations take their turns with them (ON DELETE
	// CASCADE).
	queryDelete = `DELETE FROM conversations WHERE phone = ?1`
	queryExpire = `DELETE FROM conversations WHERE phone = ?1 AND last_active <= ?2`
	querySweep  = `
		DELETE FROM conversations WHERE phone IN (
			SELECT phone FROM conversations WHERE last_active <= ?1 LIMIT ?2)`

	queryList = `
		SELECT c.phone, c.last_active, (SELECT count(*) FROM turns t WHERE t.phone = c.phone)
		FROM conversations c
		ORDER BY c.phone`
)

// preparedQueries are prepared once, when the store opens: a load or a
// save is short enough that preparing its statements each time would be a
// good part of its cost.
var preparedQueries = []string{queryLoad, querySaveState, queryInsertConv, queryTouchConv,
	queryDeleteTurns, queryInsertTurn, queryInsertTurnAt, queryMoveTurn, queryDeleteTurnsBefore,
	queryRecycleTurn, queryCapTurns, queryToolIDs, queryTurnIndex}
