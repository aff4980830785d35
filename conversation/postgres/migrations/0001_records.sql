-- Every record of every kind: a JSON value by kind and key, with the
-- version the store stamped on it (see conversation.Record). data is bytea
-- so that it round-trips byte for byte (jsonb would reorder and respace
-- it). Keys sort byte by byte (COLLATE "C"), as Go compares strings, and
-- the primary key's index serves a Get, a conditional write and a List of a
-- kind by key prefix, in key order.
--
-- Versions come from one sequence, so a record deleted and made anew never
-- gets back a version one of its earlier values had. An UPDATE takes the
-- next with SET version = DEFAULT.
CREATE SEQUENCE record_versions AS bigint;

CREATE TABLE records (
	kind    text COLLATE "C" NOT NULL,
	key     text COLLATE "C" NOT NULL,
	data    bytea            NOT NULL,
	version bigint           NOT NULL DEFAULT nextval('record_versions'),
	PRIMARY KEY (kind, key)
);

ALTER SEQUENCE record_versions OWNED BY records.version;
