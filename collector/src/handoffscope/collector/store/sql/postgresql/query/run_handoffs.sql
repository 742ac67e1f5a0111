-- One page of the handoffs of one run, in run order (seq), verdicts judged at $now:
-- $limit rows from $offset (a run may hold --max-handoffs-per-run of them).
-- A run's handoffs start within its own span of time [$lo, $hi] (first to last
-- evidence), which lets row-group min/max skip the rest of the history before the
-- integer run_key compare.
SELECT
    *,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
FROM handoffs
WHERE first_seen_ns BETWEEN $lo AND $hi
  AND run_key = $run_key
  AND run_id = $run_id
ORDER BY seq, first_seen_ns, handoff_id
LIMIT $limit OFFSET $offset;
