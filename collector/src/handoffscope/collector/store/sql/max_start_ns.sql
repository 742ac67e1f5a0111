-- The latest start time stored (NULL when empty), read once at open. A re-sent span has
-- the start time of its first copy, so an incoming span that starts after this cannot be
-- stored already: only the others need select_stored_keys.sql. Answered from row-group
-- statistics, without reading the column.
SELECT max(start_ns) FROM spans;
