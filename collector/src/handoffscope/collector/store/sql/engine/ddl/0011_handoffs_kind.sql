-- Engine step 11: handoffs.kind — 'handoff' or 'delegation' (an agent called as a tool: kept out of handoff counts,
-- paths and rejection rates). NULL in rows written before this step means handoff.
ALTER TABLE handoffs ADD COLUMN kind VARCHAR;
