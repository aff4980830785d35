-- The usage ledger: one row per phone and UTC day, the counts of
-- conversation.Usage. It is apart from conversations, with no foreign key,
-- so that clearing, expiring or sweeping a conversation keeps its usage.
-- day is "YYYY-MM-DD"; the primary key serves the upsert of one phone's day,
-- and the day index a report from a date on.
CREATE TABLE usage (
	phone           TEXT    NOT NULL,
	day             TEXT    NOT NULL,
	messages        INTEGER NOT NULL DEFAULT 0,
	api_calls       INTEGER NOT NULL DEFAULT 0,
	input_tokens    INTEGER NOT NULL DEFAULT 0,
	cache_write_5m  INTEGER NOT NULL DEFAULT 0,
	cache_write_1h  INTEGER NOT NULL DEFAULT 0,
	cache_read      INTEGER NOT NULL DEFAULT 0,
	output_tokens   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (phone, day)
);
CREATE INDEX usage_day ON usage (day);
