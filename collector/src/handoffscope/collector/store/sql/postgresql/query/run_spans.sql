-- One page of the stored evidence spans of one run (its timeline), oldest first:
-- $limit spans from $offset.
-- Spans are stored in arrival order and the run row knows its arrival window
-- [$lo, $hi], so only the row groups of that window are read.
SELECT *
FROM spans
WHERE received_ns BETWEEN $lo AND $hi
  AND handoff_run_id = $run_id
ORDER BY start_ns, end_ns, span_id
LIMIT $limit OFFSET $offset;
