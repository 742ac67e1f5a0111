-- Which spans of a group commit are stored already (`incoming_keys`: trace_id, span_id
-- of the batch, an Arrow table the writer registered). Usually none; the writer drops
-- the ones returned and inserts the rest, so a retried export counts once.
-- A retried export re-sends the same span: same (trace_id, span_id) and the same start
-- time. So only stored rows whose start_ns lies in the batch's range ($lo..$hi) can
-- match, and DuckDB skips every row group whose min/max start_ns falls outside it
-- (zonemaps): the cost stays flat as the table grows while the answer stays exact, also
-- across restarts. Only the keys travel: returning whole rows from DuckDB to Arrow costs
-- ~5 ms per 512 spans, this ~1 ms.
-- Rejected: a PRIMARY KEY (halves insert speed, doubles the file; docs/architecture.md, Storage) and an
-- in-memory set of recent keys alone (forgets on restart).
SELECT i.trace_id, i.span_id
FROM incoming_keys AS i
WHERE EXISTS (
    SELECT 1
    FROM spans AS s
    WHERE s.start_ns BETWEEN $lo AND $hi
      AND s.trace_id = i.trace_id
      AND s.span_id = i.span_id
);
