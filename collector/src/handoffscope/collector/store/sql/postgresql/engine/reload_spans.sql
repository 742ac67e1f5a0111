-- Every stored span of runs being reloaded, to replay through the merge.
-- Spans are stored in arrival order, so the runs' received_ns window ($lo..$hi) keeps
-- the scan to the row groups of that window; merging is idempotent, so a span the
-- current batch also carries does no harm.
SELECT *
FROM spans
WHERE received_ns BETWEEN $lo AND $hi
  AND handoff_run_id IN (SELECT run_id FROM hs_reload);
