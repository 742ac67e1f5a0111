-- Append the turns a step changed (hs_turn_rows). By position: hs_turn_rows's columns are
-- the table's, in order (engine/turns.py, TURN_SCHEMA).
INSERT INTO turns SELECT * FROM hs_turn_rows;
