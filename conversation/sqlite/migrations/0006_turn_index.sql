-- What lets a save skip reading the turns it joins. turn_ids is the
-- conversation's turn index: each turn's seq and tool_use ids, oldest
-- first, one line a turn (see turnIndex in turnindex.go), written with
-- the conversation's last_active by every save. A save checks the new
-- turn's ids and finds the row the cap drops there, once the seqs of the
-- turn rows match the index's; NULL (conversations saved before this
-- version) or an index that no longer matches the rows (turns added or
-- deleted by hand) makes the save read the turns and write the index anew.
ALTER TABLE conversations ADD COLUMN turn_ids TEXT;
