-- Add a step's +1/-1 deltas of entry agents (hs_turn_entries_delta, one row per key).
INSERT INTO turn_entries BY NAME SELECT * FROM hs_turn_entries_delta
ON CONFLICT DO UPDATE SET
    declared = turn_entries.declared + excluded.declared,
    firsts = turn_entries.firsts + excluded.firsts;
