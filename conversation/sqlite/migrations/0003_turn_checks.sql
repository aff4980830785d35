-- What lets a load and a save skip decoding the stored turns.
-- sum is the CRC-32C of json, written with a turn that was validated as it
-- was saved: a row whose json still has it is read without decoding or
-- validating again. Rows from before (NULL) or edited since (a mismatch)
-- are decoded and validated on every load.
-- tool_ids is the turn's tool_use ids as a JSON array, so that a save checks
-- that a new turn reuses none of them without reading the turns; on rows
-- from before it is NULL, and their json is read instead.
ALTER TABLE turns ADD COLUMN sum INTEGER;
ALTER TABLE turns ADD COLUMN tool_ids TEXT;
