-- Before a step re-tells the turns of the conversations it touched (engine/turns.py): on
-- a DuckDB file one judge writes at a time, so there is nothing to wait for (PostgreSQL's
-- own statement locks each conversation against the other collectors' judges).
SELECT 0 AS locked FROM hs_turn_conversations LIMIT 0;
