-- The recent messages of every person, both ways, remembered by id for a
-- week (conversation.RecentMessages). They are apart from conversations,
-- with no foreign key, so that a conversation's expiry and the sweep keep
-- them. at is Unix nanoseconds. The primary key serves a lookup and the
-- upsert; recent_messages_phone_at the cap of one phone's messages;
-- recent_messages_at the pruning of everyone's past the window.
CREATE TABLE recent_messages (
	phone TEXT    NOT NULL,
	id    TEXT    NOT NULL,
	role  TEXT    NOT NULL,
	text  TEXT    NOT NULL,
	at    INTEGER NOT NULL,
	PRIMARY KEY (phone, id)
);
CREATE INDEX recent_messages_phone_at ON recent_messages (phone, at);
CREATE INDEX recent_messages_at ON recent_messages (at);
