-- Every record of every kind: a JSON value by kind and key, with the
-- version the store stamped on it (see conversation.Record). The primary
-- key's index serves a Get, a conditional write and a List of a kind by
-- key prefix, in key order.
CREATE TABLE records (
	kind    TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	data    TEXT    NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (kind, key)
);
