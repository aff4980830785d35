-- The sweep deletes conversations by last activity; without this index every
-- sweep would scan the whole table.
CREATE INDEX conversations_last_active ON conversations (last_active);
