-- Append the turns a step changed (hs_turn_rows, in the table's column order).
INSERT INTO turns BY NAME SELECT * FROM hs_turn_rows;
