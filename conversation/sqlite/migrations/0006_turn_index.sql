-- What lets a save skip reading the turns it joins. turn_ids is the
-- conversation's turn index: the newest turn's seq, then each turn's
-- tool_use ids, oldest first, one line a turn (see turnIndex in
-- turnindex.go), written with the conversation's last_active by every
-- save. A save checks the new turn's ids and finds the row the cap drops
-- there while the index describes the turn rows (their number, first and
-- last seq); NULL (conversations saved before this version, or whose seqs
-- have a gap) or an index that no longer matches the rows (turns added or
-- deleted by hand) makes the save read the turns and write the index anew.
ALTER TABLE conversations ADD COLUMN turn_ids TEXT;
