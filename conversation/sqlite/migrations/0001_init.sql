-- One row per phone with a stored conversation. last_active is Unix
-- nanoseconds, so a time read back is Equal to the time saved.
CREATE TABLE conversations (
	phone       TEXT    NOT NULL PRIMARY KEY,
	last_active INTEGER NOT NULL
);

-- One row per turn, its messages as the JSON of conversation.Turn. The primary
-- key is the index by phone: a load reads one phone's rows in seq order, and a
-- save writes one row, whatever the size of the store.
CREATE TABLE turns (
	phone TEXT    NOT NULL REFERENCES conversations (phone) ON DELETE CASCADE,
	seq   INTEGER NOT NULL,
	json  TEXT    NOT NULL,
	PRIMARY KEY (phone, seq)
);
